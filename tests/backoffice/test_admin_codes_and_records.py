"""A template's codes and records pages in the admin (SPEC section 23): single-use codes
generated with a count and a prefix by whoever may manage codes, recorded once, counted on the
template's page; and the template's claims and uses, searched by user and order number."""

import re

import pytest
from django.contrib.admin.models import LogEntry

from backoffice.staff_actions import StaffAction, recorded_action
from coupons.issuing import service as issuing
from coupons.models import UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes
from orders import services as order_services
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db
TEMPLATES = "/admin/coupons/coupontemplate/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def code_manager():
    return staff_with(*VIEW_ONLY, "coupons.manage_codes")


def test_codes_are_generated_with_a_prefix_recorded_once_and_counted(client):
    manager = code_manager()
    template = CouponTemplateFactory(total=10)
    client.force_login(manager)

    response = client.post(
        f"{TEMPLATES}{template.pk}/codes/",
        {"count": "3", "code_prefix": "spring", "reach": "codes_only"},
    )
    issuing.coupon_redeem(code=SingleUseCode.objects.first().code.lower(), user_id=UserFactory().pk)
    page = client.get(f"{TEMPLATES}{template.pk}/change/", **ZH).content.decode()

    assert response.status_code == 302
    assert response["Location"] == f"{TEMPLATES}{template.pk}/change/"
    made = list(SingleUseCode.objects.filter(template=template).values_list("code", flat=True))
    assert len(made) == 3 and all(re.fullmatch(r"SPRING-[2-9A-Z]{12}", code) for code in made)
    entries = [recorded_action(entry) for entry in LogEntry.objects.filter(user=manager)]
    assert entries == [(StaffAction.CODES_CREATE, {"count": 3, "codes_only": True})]
    template.refresh_from_db()
    assert template.has_single_use_codes is True
    assert '<td class="codes-created">3</td>' in page
    assert '<td class="codes-used">1</td>' in page
    assert "generate-codes" in page and "生成一次性券码" in page


@pytest.mark.parametrize(
    ("posted", "field"),
    [
        ({"count": "0", "code_prefix": "", "reach": "keep"}, "count"),
        ({"count": "100001", "code_prefix": "", "reach": "keep"}, "count"),
        ({"count": "2", "code_prefix": "春季", "reach": "keep"}, "code_prefix"),
        ({"count": "2", "code_prefix": "SPRING-1", "reach": "keep"}, "code_prefix"),
        ({"count": "2", "code_prefix": "NINECHARS", "reach": "keep"}, "code_prefix"),
        # Leaving the shop or not is a choice the page does not make for the operator.
        ({"count": "2", "code_prefix": ""}, "reach"),
    ],
)
def test_a_bad_count_or_prefix_is_a_form_error_and_nothing_is_made(client, posted, field):
    template = CouponTemplateFactory()
    client.force_login(code_manager())

    response = client.post(f"{TEMPLATES}{template.pk}/codes/", posted, **ZH)

    assert response.status_code == 200
    assert list(response.context["form"].errors) == [field]
    assert SingleUseCode.objects.count() == 0
    assert LogEntry.objects.count() == 0


def test_the_template_list_says_how_each_template_is_issued(client):
    in_the_shop = CouponTemplateFactory(name="Shop one")
    by_code = CouponTemplateFactory(name="Code one", visibility="hidden", code="VIP-7")
    codes_only = CouponTemplateFactory(name="Codes one")
    codes.single_use_codes_create(template_id=codes_only.pk, count=1, codes_only=True)
    client.force_login(code_manager())

    page = client.get(TEMPLATES, **ZH).content.decode()

    for template, shown in (
        (in_the_shop, "商城"),
        (by_code, "兑换码或定向发放"),
        (codes_only, "仅一次性券码"),
    ):
        row = page[page.index(template.name) :]
        assert shown in row[: row.index("</tr>")], template.name


def test_a_codes_only_template_offers_no_choice_and_stays_so(client):
    template = CouponTemplateFactory(total=10)
    codes.single_use_codes_create(template_id=template.pk, count=1, codes_only=True)
    client.force_login(code_manager())

    shown = client.get(f"{TEMPLATES}{template.pk}/codes/", **ZH).content.decode()
    posted = client.post(f"{TEMPLATES}{template.pk}/codes/", {"count": "2", "code_prefix": ""})

    assert "该模板仅限一次性券码" in shown
    assert posted.status_code == 302
    template.refresh_from_db()
    assert template.has_single_use_codes is True
    assert SingleUseCode.objects.filter(template=template).count() == 3


def test_without_manage_codes_there_is_no_button_and_no_page(client):
    template = CouponTemplateFactory()
    viewer = staff_with(*VIEW_ONLY)
    client.force_login(viewer)

    page = client.get(f"{TEMPLATES}{template.pk}/change/").content.decode()
    shown = client.get(f"{TEMPLATES}{template.pk}/codes/")
    posted = client.post(f"{TEMPLATES}{template.pk}/codes/", {"count": "5", "code_prefix": ""})

    assert "generate-codes" not in page and "claim-records" in page
    assert shown.status_code == posted.status_code == 403
    assert SingleUseCode.objects.count() == 0
    assert LogEntry.objects.count() == 0


@pytest.fixture
def claims():
    template = CouponTemplateFactory(total=100, per_user_limit=1)
    other = CouponTemplateFactory()
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    carol = UserFactory(username="carol")
    coupons = {
        user.username: UserCouponFactory(template=template, user=user)
        for user in (alice, bob, carol)
    }
    UserCouponFactory(template=other, user=alice)  # another template's: never listed
    product = ProductFactory(price=9900)
    order = order_services.order_checkout(
        user_id=bob.pk,
        items=[{"product_id": product.pk, "quantity": 1}],
        coupon_id=coupons["bob"].pk,
    )
    return {"template": template, "coupons": coupons, "order": order, "users": (alice, bob, carol)}


def users_listed(page: str) -> list[str]:
    return re.findall(r'<td class="record-user"><a [^>]*>([^<]+)</a>', page)


def test_the_records_are_searched_by_user_and_by_order_number(admin_site, claims):
    url = f"{TEMPLATES}{claims['template'].pk}/records/"
    alice, bob, _carol = claims["users"]

    everyone = admin_site.get(url, **ZH).content.decode()
    by_name = admin_site.get(url, {"q": "ali"}, **ZH).content.decode()
    by_user_id = admin_site.get(url, {"q": str(alice.pk)}, **ZH).content.decode()
    order_number = str(claims["order"].pk)
    by_order = admin_site.get(url, {"q": order_number, "by": "order"}, **ZH).content.decode()
    # The issue: an order number also found the user whose id it is. Each search says what it
    # matches: alice's id as an order number finds no order of this template.
    alice_as_order = admin_site.get(url, {"q": str(alice.pk), "by": "order"}).content.decode()
    nobody = admin_site.get(url, {"q": "zed"}, **ZH).content.decode()
    used = admin_site.get(url, {"status": "used"}).content.decode()
    unused = admin_site.get(url, {"status": "unused"}).content.decode()
    granted = admin_site.get(url, {"source": "grant"}).content.decode()

    assert users_listed(everyone) == ["carol", "bob", "alice"]
    assert users_listed(by_name) == ["alice"]
    assert users_listed(by_user_id) == ["alice"]
    assert users_listed(by_order) == ["bob"]
    assert users_listed(alice_as_order) == (["bob"] if claims["order"].pk == alice.pk else [])
    assert users_listed(used) == ["bob"] and users_listed(unused) == ["carol", "alice"]
    assert users_listed(granted) == []
    assert "使用状态" in everyone and "返回" in everyone
    assert f"#{claims['order'].pk}</a> (待支付)" in by_order
    assert users_listed(nobody) == [] and "共 0 张" in nobody
    assert "领取/使用记录" in everyone and "共 3 张" in everyone


def test_the_records_come_a_page_at_a_time(admin_site, claims, django_assert_max_num_queries):
    template = claims["template"]
    for _ in range(50):
        UserCouponFactory(template=template)
    url = f"{TEMPLATES}{template.pk}/records/"

    first = admin_site.get(url).content.decode()
    with django_assert_max_num_queries(12):
        second = admin_site.get(url, {"page": "2"}).content.decode()

    assert len(users_listed(first)) == 50
    assert users_listed(second) == ["carol", "bob", "alice"]  # the oldest, newest first
    assert UserCoupon.objects.filter(template=template).count() == 53


def test_the_records_ask_for_the_view_permissions_of_what_they_show(client, claims):
    url = f"{TEMPLATES}{claims['template'].pk}/records/"
    order_number = str(claims["order"].pk)
    nobody = UserFactory(is_staff=True)  # active staff, no permission at all
    templates_only = staff_with("coupons.view_coupontemplate")
    coupons_no_orders = staff_with("coupons.view_coupontemplate", "coupons.view_usercoupon")

    client.force_login(nobody)
    refused = client.get(url)
    client.force_login(templates_only)
    refused_too = client.get(url)
    change_page = client.get(f"{TEMPLATES}{claims['template'].pk}/change/").content.decode()
    client.force_login(coupons_no_orders)
    page = client.get(url).content.decode()
    searched = client.get(url, {"q": order_number, "by": "order"}).content.decode()

    assert refused.status_code == refused_too.status_code == 403
    assert "claim-records" not in change_page  # no link to a page that would refuse
    assert sorted(users_listed(page)) == ["alice", "bob", "carol"]
    assert "record-orders" not in page  # no order numbers without orders.view_order
    assert "record-orders" not in searched


def test_a_coupon_an_unpaid_order_holds_is_not_called_used_on_any_page(admin_site, claims):
    """Issue 42: the records and coupon pages said 已使用 for it, the funnel and the CSV not."""
    bob_coupon = claims["coupons"]["bob"]
    template = claims["template"]
    unpaid = "已使用，订单未支付"

    records = admin_site.get(f"{TEMPLATES}{template.pk}/records/", **ZH).content.decode()
    coupon_list = admin_site.get("/admin/coupons/usercoupon/", **ZH).content.decode()
    coupon_page = admin_site.get(
        f"/admin/coupons/usercoupon/{bob_coupon.pk}/change/", **ZH
    ).content.decode()
    template_page = admin_site.get(f"{TEMPLATES}{template.pk}/change/", **ZH).content.decode()
    order = claims["order"]
    order_services.order_pay(user_id=order.user_id, order_id=order.pk, amount=order.pay_amount)
    paid_records = admin_site.get(f"{TEMPLATES}{template.pk}/records/", **ZH).content.decode()

    for page in (records, coupon_list, coupon_page, template_page):
        assert unpaid in page
    assert unpaid not in paid_records and '<td class="record-status">已使用</td>' in paid_records
