"""Exclusions and one-unit-only coupons (SPEC section 25) through the doors: published and
refused by the admin API, frozen once claimed, applied at checkout and shown by the advisor."""

from datetime import timedelta

import pytest

from core import clock
from coupons.issuing import service as issuing
from coupons.models import CouponTemplate
from coupons.services import templates
from orders import services as order_services
from orders.models import Category
from tests.support.admin_forms import form_data
from tests.support.factories import ProductFactory, UserFactory

pytestmark = pytest.mark.django_db


def window() -> dict:
    now = clock.now()
    return {
        "valid_from": (now - timedelta(hours=1)).isoformat(),
        "valid_until": (now + timedelta(days=1)).isoformat(),
    }


@pytest.fixture
def shop():
    gift_cards, tea = Category.objects.create(name="礼品卡"), Category.objects.create(name="茶")
    return {
        "flash": ProductFactory(price=8000, stock=50, category=tea),
        "gift_card": ProductFactory(price=5000, stock=50, category=gift_cards),
        "tea": ProductFactory(price=3000, stock=50, category=tea),
        "cup": ProductFactory(price=1000, stock=50),
        "gift_cards": gift_cards,
    }


def test_a_store_wide_coupon_excludes_products_and_categories_at_checkout(staff_client, shop):
    published = staff_client.post(
        "/api/admin/coupons",
        {
            "name": "满100减10，秒杀与礼品卡除外",
            "type": "threshold",
            "value": 1000,
            "min_amount": 10000,
            "total": 10,
            "excluded_product_ids": [shop["flash"].pk],
            "excluded_category_ids": [shop["gift_cards"].pk],
            **window(),
        },
        format="json",
    )
    assert published.status_code == 201, published.json()
    template_id = published.json()["id"]
    shopper = UserFactory()
    coupon = issuing.coupon_claim(template_id=template_id, user_id=shopper.pk)

    def checkout(lines):
        return order_services.order_checkout(
            user_id=shopper.pk,
            items=[{"product_id": shop[name].pk, "quantity": n} for name, n in lines],
            coupon_id=coupon.pk,
        )

    # 16000 + 5000 + 3000 = 24000 in the cart, but only the tea's 3000 is eligible
    with pytest.raises(Exception) as short:
        checkout([("flash", 2), ("gift_card", 1), ("tea", 1)])
    order = checkout([("flash", 1), ("tea", 3), ("cup", 1)])  # eligible 9000 + 1000

    assert getattr(short.value, "code", None) == "threshold_not_met"
    assert order.discount_amount == 1000
    shares = {item.product_id: item.discount_amount for item in order.items.all()}
    assert shares == {shop["flash"].pk: 0, shop["tea"].pk: 900, shop["cup"].pk: 100}
    assert published.json()["excluded_category_ids"] == [shop["gift_cards"].pk]


def test_a_one_unit_only_coupon_takes_20_percent_off_the_cheapest_unit(shop):
    now = clock.now()
    template = templates.coupon_template_publish(
        name="单件八折",
        type="percent",
        value=20,
        total=5,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(days=1),
        one_unit_only=True,
    )
    shopper = UserFactory()
    coupon = issuing.coupon_claim(template_id=template.pk, user_id=shopper.pk)

    order = order_services.order_checkout(
        user_id=shopper.pk,
        items=[
            {"product_id": shop["flash"].pk, "quantity": 2},
            {"product_id": shop["tea"].pk, "quantity": 3},
        ],
        coupon_id=coupon.pk,
    )

    assert order.discount_amount == 600  # 20% of one 3000 tea, not of the 25000 cart
    shares = {item.product_id: item.discount_amount for item in order.items.all()}
    assert shares == {shop["flash"].pk: 0, shop["tea"].pk: 600}


@pytest.mark.parametrize(
    ("terms", "field"),
    [
        ({"scope": "products", "scope_ids": ["tea"], "excluded_product_ids": ["flash"]},
         "excluded_product_ids"),
        ({"excluded_product_ids": [10**9]}, "excluded_product_ids"),
        ({"excluded_category_ids": [10**9]}, "excluded_category_ids"),
        ({"excluded_category_ids": "gift cards"}, "excluded_category_ids"),
        ({"one_unit_only": "maybe"}, "one_unit_only"),
    ],
)  # fmt: skip
def test_bad_exclusions_or_one_unit_are_400_naming_the_field(staff_client, shop, terms, field):
    named = {
        key: [shop[item].pk if isinstance(item, str) else item for item in value]
        if isinstance(value, list)
        else value
        for key, value in terms.items()
    }
    body = {"name": "x", "type": "direct", "value": 500, "total": 1, **window(), **named}

    response = staff_client.post("/api/admin/coupons", body, format="json")

    assert response.status_code == 400, response.json()
    assert field in response.json()["fields"]


def test_exclusions_and_one_unit_freeze_once_claimed(staff_client, shop):
    now = clock.now()
    template = templates.coupon_template_publish(
        name="冻结",
        type="direct",
        value=500,
        total=5,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(days=1),
    )
    issuing.coupon_claim(template_id=template.pk, user_id=UserFactory().pk)

    answers = [
        staff_client.patch(f"/api/admin/coupons/{template.pk}", change, format="json")
        for change in (
            {"excluded_product_ids": [shop["flash"].pk]},
            {"excluded_category_ids": [shop["gift_cards"].pk]},
            {"one_unit_only": True},
        )
    ]

    assert [answer.status_code for answer in answers] == [400, 400, 400]
    assert [list(answer.json()["fields"]) for answer in answers] == [
        ["excluded_product_ids"],
        ["excluded_category_ids"],
        ["one_unit_only"],
    ]


def test_the_advisor_leaves_excluded_lines_out_and_says_what_is_excluded(
    shopper_client, user, shop
):
    now = clock.now()
    template = templates.coupon_template_publish(
        name="全场9折，礼品卡除外",
        type="percent",
        value=10,
        total=5,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(days=1),
        excluded_category_ids=[shop["gift_cards"].pk],
    )
    issuing.coupon_claim(template_id=template.pk, user_id=user.pk)

    options = shopper_client.post(
        "/api/orders/coupon-options",
        {"items": [{"product_id": shop["gift_card"].pk, "quantity": 2},
                   {"product_id": shop["tea"].pk, "quantity": 1}]},
        format="json",
    ).json()["results"]  # fmt: skip

    (option,) = options
    assert (option["eligible_subtotal"], option["discount"]) == (3000, 300)
    assert option["excluded_category_ids"] == [shop["gift_cards"].pk]


def test_the_admin_publishes_exclusions_picked_by_name_and_one_unit_only(admin_site, shop):
    page = admin_site.get(
        "/admin/coupons/coupontemplate/add/", HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    response = admin_site.post(
        "/admin/coupons/coupontemplate/add/",
        form_data(
            name="Admin exclusions",
            excluded_category_ids=[str(shop["gift_cards"].pk)],
            excluded_product_ids=[str(shop["flash"].pk)],
            one_unit_only="on",
        ),
    )

    assert "排除的类目" in page and "仅限一件" in page and "礼品卡" in page
    assert response.status_code == 302
    template = CouponTemplate.objects.get(name="Admin exclusions")
    assert template.excluded_category_ids == [shop["gift_cards"].pk]
    assert template.excluded_product_ids == [shop["flash"].pk]
    assert template.one_unit_only is True
