"""cancel_expired_orders: unpaid orders past expire_at are cancelled through the cancel path."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from coupons.models import UserCoupon
from orders import services
from orders.errors import OrderInvalidState
from orders.models import Order, Product
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)


def run_command() -> str:
    out = io.StringIO()
    call_command("cancel_expired_orders", stdout=out)
    return out.getvalue()


def place_order(user, product, coupon=None) -> Order:
    return services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": product.pk, "quantity": 1}],
        coupon_id=coupon.pk if coupon else None,
    )


@pytest.mark.django_db
def test_expired_orders_are_cancelled_with_stock_and_coupon_returned(user, frozen_now):
    start = frozen_now.now()
    product = ProductFactory(stock=10)
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=100))
    expiring = place_order(user, product, coupon)
    frozen_now(start + timedelta(minutes=1))
    fresh = place_order(user, product)
    paid = place_order(user, product)
    services.order_pay(user_id=user.pk, order_id=paid.pk, amount=paid.pay_amount)
    assert expiring.expire_at == start + timedelta(minutes=15)

    # At the deadline exactly: nothing expired yet (expire_at is the last payable moment).
    frozen_now(start + timedelta(minutes=15))
    assert "cancelled 0 expired orders" in run_command()

    frozen_now(start + timedelta(minutes=15, milliseconds=1))
    output = run_command()

    assert "cancelled 1 expired orders" in output
    statuses = dict(Order.objects.values_list("pk", "status"))
    assert statuses == {expiring.pk: "cancelled", fresh.pk: "pending_payment", paid.pk: "paid"}
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("unused", None)
    product.refresh_from_db()
    assert product.stock == 8
    # Running again finds nothing left to do.
    assert "cancelled 0 expired orders" in run_command()


@pytest.mark.django_db
def test_order_expire_skips_an_order_not_yet_due_or_already_settled(user, frozen_now):
    order = place_order(user, ProductFactory())

    assert services.order_expire(order_id=order.pk) is False  # not due
    frozen_now(order.expire_at)
    assert services.order_expire(order_id=order.pk) is False  # still payable at the deadline
    services.order_cancel(user_id=user.pk, order_id=order.pk)
    assert services.order_expire(order_id=order.pk) is False  # already cancelled
    assert Order.objects.get().status == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_expiry_racing_user_cancels_cancels_each_order_exactly_once(frozen_now):
    # given: 10 expired orders, each with its own coupon, on one product
    product = ProductFactory(stock=100)
    orders = []
    for _ in range(10):
        coupon = UserCouponFactory(template=CouponTemplateFactory(value=100))
        orders.append(place_order(coupon.user, product, coupon))
    frozen_now(frozen_now.now() + timedelta(minutes=16))
    assert Product.objects.get().stock == 90

    user_outcomes: list[str] = []

    def users_cancel() -> None:
        for order in orders:
            try:
                services.order_cancel(user_id=order.user_id, order_id=order.pk)
                user_outcomes.append("cancelled")
            except OrderInvalidState:
                user_outcomes.append("invalid_state")

    _, *command_output = run_together([users_cancel, run_command, run_command])

    by_command = sum(int(output.split("cancelled ")[-1].split(" ")[0]) for output in command_output)
    assert len(user_outcomes) == 10
    assert user_outcomes.count("cancelled") + by_command == 10
    assert set(Order.objects.values_list("status", flat=True)) == {"cancelled"}
    assert Product.objects.get().stock == 100  # each order's unit returned exactly once
    assert list(UserCoupon.objects.values_list("status", flat=True)) == ["unused"] * 10


@pytest.mark.django_db(transaction=True)
def test_expiry_racing_one_user_cancel_on_the_same_order(frozen_now):
    for _ in range(5):  # a few rounds: the winner changes with scheduling
        product = ProductFactory(stock=3)
        coupon = UserCouponFactory(template=CouponTemplateFactory(value=100))
        order = place_order(coupon.user, product, coupon)
        frozen_now(order.expire_at + timedelta(seconds=1))

        def user_cancel(order=order, coupon=coupon) -> str | None:
            try:
                services.order_cancel(user_id=coupon.user_id, order_id=order.pk)
                return "user"
            except OrderInvalidState:
                return None

        def expire(order=order) -> str | None:
            return "expiry" if services.order_expire(order_id=order.pk) else None

        outcomes = [o for o in run_together([user_cancel, expire]) if o is not None]

        assert len(outcomes) == 1
        order.refresh_from_db()
        coupon.refresh_from_db()
        product.refresh_from_db()
        assert (order.status, coupon.status, product.stock) == ("cancelled", "unused", 3)


@pytest.mark.django_db
def test_command_prints_progress_with_no_orders():
    assert run_command().strip() == "Done: cancelled 0 expired orders, skipped 0 already settled."
    assert UserFactory()  # the database is usable afterwards
