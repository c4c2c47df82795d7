"""Seckill orders never carry a coupon, and every order rule the database can hold is a CHECK."""

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from orders import services
from orders.errors import CouponNotAllowed
from orders.models import Order
from tests.support.factories import ProductFactory, UserCouponFactory
from tests.support.snapshots import snapshot

pytestmark = pytest.mark.django_db


def test_seckill_order_without_coupon(user, now):
    product = ProductFactory(price=100, stock=1)

    order = services.seckill_order_create(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )

    assert (order.order_type, order.status, order.total_amount, order.pay_amount) == (
        "seckill",
        "pending_payment",
        100,
        100,
    )
    assert order.coupon_id is None
    product.refresh_from_db()
    assert product.stock == 0


def test_seckill_with_a_coupon_is_refused_by_the_service(user, now):
    product = ProductFactory(stock=1)
    coupon = UserCouponFactory(user=user)
    before = snapshot()

    with pytest.raises(CouponNotAllowed) as raised:
        services.seckill_order_create(
            user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}], coupon_id=coupon.pk
        )

    assert raised.value.code == "coupon_not_allowed"
    assert snapshot() == before


def test_seckill_has_no_public_endpoint(shopper_client):
    product = ProductFactory()
    response = shopper_client.post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "order_type": "seckill"},
        format="json",
    )
    assert response.status_code == 400
    assert "order_type" in response.json()["fields"]
    assert shopper_client.post("/api/orders/seckill", {}, format="json").status_code == 404


def test_seckill_with_a_coupon_is_refused_by_the_database(user, now):
    product = ProductFactory(stock=5)
    seckill = services.seckill_order_create(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    coupon = UserCouponFactory(user=user, status="used", used_at=now)

    with pytest.raises(DatabaseError, match="order_seckill_without_coupon"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE orders SET coupon_id = %s WHERE id = %s", [coupon.pk, seckill.pk]
            )
    with pytest.raises(DatabaseError, match="order_seckill_without_coupon"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO orders (user_id, order_type, status, total_amount, discount_amount,"
                " pay_amount, coupon_id, expire_at, created_at, updated_at) VALUES"
                " (%s, 'seckill', 'pending_payment', 100, 0, 100, %s, NOW(), NOW(), NOW())",
                [user.pk, coupon.pk],
            )
    assert Order.objects.get().coupon_id is None


@pytest.fixture
def plain_order(user, now):
    product = ProductFactory(price=1000, stock=5)
    return services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 2}]
    )


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("order_type = 'bulk'", "order_type_known"),
        ("status = 'lost'", "order_status_known"),
        ("pay_amount = -1, total_amount = 1999", "order_amounts_not_negative"),
        # Implied by the two rules around it, so it can only fail together with one of them.
        ("discount_amount = 2001, pay_amount = 0", "order_discount_within_total"),
        ("pay_amount = 1999", "order_amounts_add_up"),
        ("total_amount = 2001", "order_amounts_add_up"),
        ("discount_amount = 500, pay_amount = 1500", "order_discount_needs_coupon"),
        ("status = 'paid'", "order_paid_at_matches_status"),
        ("paid_at = NOW()", "order_paid_at_matches_status"),
        ("status = 'cancelled'", "order_cancelled_at_matches_status"),
        ("cancelled_at = NOW()", "order_cancelled_at_matches_status"),
    ],
)
def test_order_check_constraints_reject_bad_rows(plain_order, assignment, constraint):
    with pytest.raises(DatabaseError, match=constraint), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE orders SET {assignment} WHERE id = %s", [plain_order.pk])


@pytest.mark.parametrize(
    ("table", "assignment", "constraint"),
    [
        ("order_items", "quantity = 0", "order_item_quantity_in_range"),
        ("order_items", "quantity = 1000", "order_item_quantity_in_range"),
        ("order_items", "unit_price = -1", "order_item_unit_price_in_range"),
        ("order_items", "discount_amount = -1", "order_item_discount_within_line"),
        (
            "order_items",
            "discount_amount = unit_price * quantity + 1",
            "order_item_discount_within_line",
        ),
        ("products", "stock = -1", "product_stock_not_negative"),
        ("products", "price = -1", "product_price_in_range"),
        ("products", "price = 100000000001", "product_price_in_range"),
    ],
)
def test_product_and_item_check_constraints_reject_bad_rows(
    plain_order, table, assignment, constraint
):
    with pytest.raises(DatabaseError, match=constraint), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {assignment}")


def test_one_line_per_product_in_an_order(plain_order):
    item = plain_order.items.get()
    with pytest.raises(IntegrityError, match="order_item_one_line_per_product"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO order_items"
                " (order_id, product_id, title, unit_price, quantity, discount_amount)"
                " VALUES (%s, %s, 'x', 1, 1, 0)",
                [plain_order.pk, item.product_id],
            )


def test_a_good_row_passes_every_constraint(plain_order, now):
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE orders SET status = 'paid', paid_at = NOW() WHERE id = %s", [plain_order.pk]
        )
    plain_order.refresh_from_db()
    assert plain_order.status == "paid"
