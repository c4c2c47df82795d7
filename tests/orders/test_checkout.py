"""POST /api/orders and the checkout service: stock, prices, coupons, thresholds."""

from datetime import timedelta

import pytest

from coupons.models import UserCoupon
from orders import services
from orders.errors import OutOfStock, ProductNotFound
from orders.models import Order, OrderItem
from tests.support.clients import bearer_client
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.snapshots import snapshot

pytestmark = pytest.mark.django_db


def checkout(client, items, coupon_id=None):
    body = {"items": [{"product_id": p.pk, "quantity": q} for p, q in items]}
    if coupon_id is not None:
        body["coupon_id"] = coupon_id
    return client.post("/api/orders", body, format="json")


def test_checkout_without_coupon_takes_stock_and_snapshots_prices(user, shopper_client, now):
    shirt = ProductFactory(name="Shirt", price=9900, stock=10)
    socks = ProductFactory(name="Socks", price=1500, stock=3)

    response = checkout(shopper_client, [(socks, 3), (shirt, 2)])

    assert response.status_code == 201
    order = Order.objects.get()
    shirt_line, socks_line = order.items.order_by("product_id").values_list("pk", flat=True)
    assert response.json() == {
        "id": order.pk,
        "user_id": user.pk,
        "order_type": "normal",
        "status": "pending_payment",
        "total_amount": 24300,
        "discount_amount": 0,
        "pay_amount": 24300,
        "coupon_id": None,
        "items": [
            {
                "id": shirt_line,
                "product_id": shirt.pk,
                "title": "Shirt",
                "unit_price": 9900,
                "quantity": 2,
                "discount_amount": 0,
                "refunded_quantity": 0,
            },
            {
                "id": socks_line,
                "product_id": socks.pk,
                "title": "Socks",
                "unit_price": 1500,
                "quantity": 3,
                "discount_amount": 0,
                "refunded_quantity": 0,
            },
        ],
        "expire_at": (now + timedelta(minutes=15)).isoformat().replace("+00:00", "Z"),
        "paid_at": None,
        "cancelled_at": None,
        "refunded_at": None,
        "refunded_amount": 0,
        "created_at": now.isoformat().replace("+00:00", "Z"),
        "updated_at": now.isoformat().replace("+00:00", "Z"),
    }
    shirt.refresh_from_db()
    socks.refresh_from_db()
    assert (shirt.stock, socks.stock) == (8, 0)

    # Later price changes do not touch the order's snapshot.
    shirt.price = 1
    shirt.name = "Renamed"
    shirt.save()
    item = OrderItem.objects.get(order=order, product=shirt)
    assert (item.title, item.unit_price) == ("Shirt", 9900)


def test_threshold_coupon_at_exact_amounts(user, shopper_client, now):
    # given: total 29700, coupon 5000 off from 20000
    product = ProductFactory(price=9900, stock=10)
    template = CouponTemplateFactory(type="threshold", value=5000, min_amount=20000)
    coupon = UserCouponFactory(user=user, template=template)

    response = checkout(shopper_client, [(product, 3)], coupon.pk)

    assert response.status_code == 201
    body = response.json()
    assert (body["total_amount"], body["discount_amount"], body["pay_amount"]) == (
        29700,
        5000,
        24700,
    )
    assert body["coupon_id"] == coupon.pk
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("used", now)


def test_threshold_met_exactly_at_min_amount(user, shopper_client, now):
    product = ProductFactory(price=20000, stock=10)
    template = CouponTemplateFactory(type="threshold", value=5000, min_amount=20000)
    coupon = UserCouponFactory(user=user, template=template)

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 201
    assert response.json()["pay_amount"] == 15000


def test_threshold_not_met_is_409_and_changes_nothing(user, shopper_client, now):
    product = ProductFactory(price=19999, stock=10)
    template = CouponTemplateFactory(type="threshold", value=5000, min_amount=20000)
    coupon = UserCouponFactory(user=user, template=template)
    before = snapshot()

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 409
    assert response.json()["code"] == "threshold_not_met"
    assert snapshot() == before


def test_direct_coupon_larger_than_the_total_makes_it_free(user, shopper_client, now):
    product = ProductFactory(price=300, stock=10)
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=500))

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 201
    body = response.json()
    assert (body["total_amount"], body["discount_amount"], body["pay_amount"]) == (300, 300, 0)


def test_another_users_coupon_is_404_and_changes_nothing(shopper_client, now):
    product = ProductFactory()
    coupon = UserCouponFactory(user=UserFactory())
    before = snapshot()

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Coupon not found."}
    assert snapshot() == before


def test_used_coupon_is_409_coupon_used(user, shopper_client, now):
    product = ProductFactory()
    coupon = UserCouponFactory(user=user, status="used", used_at=now - timedelta(hours=1))
    before = snapshot()

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 409
    assert response.json()["code"] == "coupon_used"
    assert snapshot() == before


@pytest.mark.parametrize(
    ("starts", "ends"),
    [
        (timedelta(hours=1), timedelta(days=1)),  # not started yet
        (timedelta(days=-2), timedelta(milliseconds=-1)),  # ended
    ],
)
def test_coupon_outside_its_window_is_409_coupon_expired(user, shopper_client, now, starts, ends):
    product = ProductFactory()
    template = CouponTemplateFactory(valid_from=now + starts, valid_until=now + ends)
    coupon = UserCouponFactory(user=user, template=template)
    before = snapshot()

    response = checkout(shopper_client, [(product, 1)], coupon.pk)

    assert response.status_code == 409
    assert response.json()["code"] == "coupon_expired"
    assert snapshot() == before


def test_a_coupon_used_between_check_and_use_is_409_and_stock_is_back(user, monkeypatch, now):
    # get_usable passes, then the coupon is used elsewhere before use_coupon runs.
    from coupons import ports

    product = ProductFactory(stock=5)
    coupon = UserCouponFactory(user=user)
    real_get_usable = ports.get_usable

    def get_usable_then_lose_race(*, user_id, coupon_id):
        usable = real_get_usable(user_id=user_id, coupon_id=coupon_id)
        UserCoupon.objects.filter(pk=coupon_id).update(status="used", used_at=now)
        return usable

    monkeypatch.setattr(ports, "get_usable", get_usable_then_lose_race)

    response = checkout(bearer_client(user), [(product, 2)], coupon.pk)

    assert response.status_code == 409
    assert response.json()["code"] == "coupon_used"
    product.refresh_from_db()
    assert product.stock == 5
    assert Order.objects.count() == 0


def test_out_of_stock_on_any_line_is_409_and_takes_nothing(shopper_client, now):
    plenty = ProductFactory(stock=10)
    scarce = ProductFactory(stock=1)
    before = snapshot()

    response = checkout(shopper_client, [(plenty, 3), (scarce, 2)])

    assert response.status_code == 409
    assert response.json() == {
        "code": "out_of_stock",
        "detail": f"Not enough stock for product {scarce.pk}.",
    }
    assert snapshot() == before


def test_the_last_units_can_be_bought_and_then_none(user, now):
    product = ProductFactory(stock=2)

    services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 2}])

    with pytest.raises(OutOfStock):
        services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}])
    product.refresh_from_db()
    assert product.stock == 0


def test_unknown_product_is_404_and_takes_nothing(user, shopper_client, now):
    product = ProductFactory(stock=10)
    before = snapshot()

    response = shopper_client.post(
        "/api/orders",
        {
            "items": [
                {"product_id": product.pk, "quantity": 1},
                {"product_id": 10**15, "quantity": 1},
            ]
        },
        format="json",
    )

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert snapshot() == before
    with pytest.raises(ProductNotFound):
        services.order_checkout(user_id=user.pk, items=[{"product_id": 10**15, "quantity": 1}])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "items"),
        ({"items": []}, "items"),
        ({"items": "x"}, "items"),
        ({"items": [{"product_id": 1}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 0}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1000}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 10**30}]}, "items"),
        ({"items": [{"product_id": 2**63, "quantity": 1}]}, "items"),
        ({"items": [{"product_id": -1, "quantity": 1}]}, "items"),
        ({"items": [{"product_id": "1x", "quantity": 1}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1, "price": 1}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1}] * 2}, "items"),
        ({"items": [{"product_id": n, "quantity": 1} for n in range(1, 52)]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1}], "coupon_id": 2**63}, "coupon_id"),
        ({"items": [{"product_id": 1, "quantity": 1}], "coupon_id": "abc"}, "coupon_id"),
        ({"items": [{"product_id": 1, "quantity": 1}], "discount": 5}, "discount"),
        ({"items": None}, "items"),
        ({"items": [1]}, "items"),
        ({"items": [None]}, "items"),
        ({"items": [{"product_id": True, "quantity": 1}]}, "items"),
        ({"items": [{"product_id": 1.5, "quantity": 1}]}, "items"),
        ({"items": [{"product_id": 1, "quantity": 1}], "coupon_id": 0}, "coupon_id"),
        ([], "non_field_errors"),
        ("just a string", "non_field_errors"),
    ],
)
def test_bad_checkout_input_is_400_naming_the_field(shopper_client, body, field):
    response = shopper_client.post("/api/orders", body, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["fields"]
    assert Order.objects.count() == 0


def test_null_coupon_id_means_no_coupon(shopper_client, now):
    product = ProductFactory(price=100)
    response = shopper_client.post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": None},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["coupon_id"] is None


def test_largest_order_does_not_overflow(shopper_client, now, settings):
    settings.ORDER_LINE_MAX_QUANTITY = 999  # the highest cap the setting accepts
    products = [ProductFactory(price=10**11, stock=999) for _ in range(50)]

    response = checkout(shopper_client, [(product, 999) for product in products])

    assert response.status_code == 201
    assert response.json()["total_amount"] == 50 * 999 * 10**11
