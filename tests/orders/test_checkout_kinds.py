"""Checkout and the advisor with percent coupons, caps, thresholds and scope, on MariaDB: the
order's discount, its split per line (stored and in the API), and 409 coupon_not_applicable
with nothing changed."""

import pytest

from coupons.models import UserCoupon
from orders.models import Category, Order, OrderItem
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserCouponFactory
from tests.support.snapshots import snapshot

pytestmark = pytest.mark.django_db


def checkout(client, items, coupon_id=None):
    body = {"items": [{"product_id": p.pk, "quantity": q} for p, q in items]}
    if coupon_id is not None:
        body["coupon_id"] = coupon_id
    return client.post("/api/orders", body, format="json")


@pytest.fixture
def catalog():
    tea, kitchen = Category.objects.create(name="Tea"), Category.objects.create(name="Kitchen")
    return {
        "tea": tea,
        "kitchen": kitchen,
        "tea_set": ProductFactory(name="Tea set", price=9900, category=tea),
        "green_tea": ProductFactory(name="Green tea", price=4500, category=tea),
        "cooker": ProductFactory(name="Rice cooker", price=29700, category=kitchen),
        "spoon": ProductFactory(name="Spoon", price=333, category=None),
    }


def test_a_percent_coupon_on_categories_discounts_only_those_lines_split_per_line(
    user, now, catalog
):
    template = CouponTemplateFactory(
        type="percent",
        value=20,
        max_discount=2500,
        min_amount=10000,
        scope="categories",
        scope_ids=[catalog["tea"].pk],
    )
    coupon = UserCouponFactory(user=user, template=template)

    response = checkout(
        bearer_client(user),
        [(catalog["tea_set"], 1), (catalog["cooker"], 1), (catalog["green_tea"], 1)],
        coupon.pk,
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    # eligible 9900 + 4500 = 14400; 20% = 2880, capped at 2500; 9900:4500 -> 1718.75 / 781.25
    assert (body["total_amount"], body["discount_amount"], body["pay_amount"]) == (
        44100,
        2500,
        41600,
    )
    by_product = {item["product_id"]: item["discount_amount"] for item in body["items"]}
    assert by_product == {
        catalog["tea_set"].pk: 1719,
        catalog["green_tea"].pk: 781,
        catalog["cooker"].pk: 0,
    }
    stored = dict(OrderItem.objects.values_list("product_id", "discount_amount"))
    assert stored == by_product


def test_three_lines_share_a_100_cent_discount_exactly(user, now):
    products = [ProductFactory(price=1000) for _ in range(3)]
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=100))

    response = checkout(bearer_client(user), [(p, 1) for p in products], coupon.pk)

    assert response.status_code == 201
    parts = [item["discount_amount"] for item in response.json()["items"]]
    assert parts == [34, 33, 33]
    assert sum(parts) == Order.objects.get().discount_amount == 100


def test_awkward_amounts_still_add_up(user, now):
    prices = [333, 667, 1, 9999]
    products = [ProductFactory(price=price) for price in prices]
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(type="percent", value=37))

    response = checkout(bearer_client(user), [(p, 3) for p in products], coupon.pk)

    assert response.status_code == 201
    order = Order.objects.get()
    assert order.discount_amount == (3 * sum(prices)) * 37 // 100 == 12210
    assert sum(order.items.values_list("discount_amount", flat=True)) == 12210


def test_a_cart_with_no_line_in_scope_is_409_and_changes_nothing(user, now, catalog):
    template = CouponTemplateFactory(scope="products", scope_ids=[catalog["cooker"].pk])
    coupon = UserCouponFactory(user=user, template=template)
    before = snapshot()

    response = checkout(bearer_client(user), [(catalog["tea_set"], 1)], coupon.pk)

    assert response.status_code == 409
    assert response.json()["code"] == "coupon_not_applicable"
    assert snapshot() == before
    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.UNUSED


def test_an_uncategorised_product_is_in_no_category(user, now, catalog):
    template = CouponTemplateFactory(scope="categories", scope_ids=[catalog["tea"].pk])
    coupon = UserCouponFactory(user=user, template=template)

    response = checkout(bearer_client(user), [(catalog["spoon"], 1)], coupon.pk)

    assert response.json()["code"] == "coupon_not_applicable"


def test_the_threshold_is_on_the_eligible_subtotal(user, now, catalog):
    template = CouponTemplateFactory(
        type="threshold",
        value=1000,
        min_amount=10000,
        scope="categories",
        scope_ids=[catalog["tea"].pk],
    )
    coupon = UserCouponFactory(user=user, template=template)
    before = snapshot()

    # the order is 39600, but only 9900 of it is tea
    response = checkout(
        bearer_client(user), [(catalog["tea_set"], 1), (catalog["cooker"], 1)], coupon.pk
    )

    assert response.status_code == 409
    assert response.json()["code"] == "threshold_not_met"
    assert snapshot() == before


def test_the_cart_advisor_judges_scope_type_cap_and_threshold(user, now, catalog):
    make = CouponTemplateFactory
    tea = [catalog["tea"].pk]
    capped = UserCouponFactory(
        user=user,
        template=make(
            type="percent", value=50, max_discount=3000, scope="categories", scope_ids=tea
        ),
    )
    flat = UserCouponFactory(user=user, template=make(value=800))
    short = UserCouponFactory(
        user=user,
        template=make(
            type="threshold", value=2000, min_amount=20000, scope="categories", scope_ids=tea
        ),
    )
    elsewhere = UserCouponFactory(
        user=user, template=make(scope="products", scope_ids=[catalog["cooker"].pk])
    )
    items = [
        {"product_id": catalog["tea_set"].pk, "quantity": 1},
        {"product_id": catalog["spoon"].pk, "quantity": 3},
    ]

    response = bearer_client(user).post(
        "/api/orders/coupon-options", {"items": items}, format="json"
    )

    assert response.status_code == 200, response.json()
    results = response.json()["results"]
    assert [
        (
            r["coupon_id"],
            r["usable"],
            r["discount"],
            r["reason"],
            r["shortfall"],
            r["eligible_subtotal"],
        )
        for r in results
    ] == [
        (capped.pk, True, 3000, None, None, 9900),
        (flat.pk, True, 800, None, None, 10899),
        (short.pk, False, 0, "threshold_not_met", 10100, 9900),
        (elsewhere.pk, False, 0, "not_applicable", None, 0),
    ]
    # the GET form keeps working for store-wide coupons; a scoped one needs the cart
    by_amount = bearer_client(user).get("/api/orders/coupon-options?amount=10899").json()
    reasons = {r["coupon_id"]: (r["reason"], r["discount"]) for r in by_amount["results"]}
    assert reasons == {
        flat.pk: (None, 800),
        capped.pk: ("cart_required", 0),
        short.pk: ("cart_required", 0),
        elsewhere.pk: ("cart_required", 0),
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"items": [{"product_id": "x", "quantity": 1}]}, "items"),
        ({"items": []}, "items"),
        ({}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1}], "amount": 5}, "amount"),
    ],
)
def test_the_cart_advisor_refuses_bad_carts(shopper_client, body, field):
    response = shopper_client.post("/api/orders/coupon-options", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]


def test_the_cart_advisor_404s_an_unknown_product(shopper_client):
    response = shopper_client.post(
        "/api/orders/coupon-options",
        {"items": [{"product_id": 987654, "quantity": 1}]},
        format="json",
    )
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
