"""Refunds (SPEC section 20): staff refund a paid order; its stock comes back, its coupon too
while the coupon's window is open, recorded in the order's history; twice is once."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages

from accounts.errors import StaffActionRefused
from accounts.staff_actions import StaffAction, recorded_action
from coupons.models import UserCoupon
from orders.errors import OrderInvalidState
from orders.models import Order, Product
from orders.refunds import order_refund
from orders.services import order_checkout, order_pay
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserCouponFactory


def paid_order(coupon=None, *, quantity=2):
    product = ProductFactory(price=5000, stock=10)
    user_id = coupon.user_id if coupon is not None else UserCouponFactory().user_id
    order = order_checkout(
        user_id=user_id,
        items=[{"product_id": product.pk, "quantity": quantity}],
        coupon_id=None if coupon is None else coupon.pk,
    )
    return order_pay(user_id=user_id, order_id=order.pk, amount=order.pay_amount), product


def refunds_recorded(order) -> list[dict]:
    entries = LogEntry.objects.filter(object_id=str(order.pk)).order_by("pk")
    return [
        amounts
        for entry in entries
        if (recorded := recorded_action(entry)) and recorded[0] == StaffAction.ORDER_REFUND
        for amounts in [recorded[1]]
    ]


@pytest.mark.django_db
def test_a_refund_returns_stock_and_the_coupon_and_is_recorded_once(staff):
    coupon = UserCouponFactory(template=CouponTemplateFactory(value=500))
    order, product = paid_order(coupon)

    refunded = order_refund(order_id=order.pk, actor=staff)
    again = order_refund(order_id=order.pk, actor=staff)

    assert (refunded.status, again.status) == ("refunded", "refunded")
    assert Product.objects.get(pk=product.pk).stock == 10
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == (UserCoupon.Status.UNUSED, None)
    assert refunds_recorded(order) == [
        {"pay_amount": 9500, "stock_returned": {str(product.pk): 2}, "coupon": "returned"}
    ]
    order.refresh_from_db()
    assert order.refunded_at is not None and order.paid_at is not None


@pytest.mark.django_db
def test_a_coupon_whose_window_closed_stays_used(staff, frozen_now):
    coupon = UserCouponFactory()
    order, _product = paid_order(coupon)
    frozen_now(coupon.valid_until + timedelta(seconds=1))

    order_refund(order_id=order.pk, actor=staff)

    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.USED
    assert refunds_recorded(order)[0]["coupon"] == "kept"


@pytest.mark.django_db
def test_only_paid_orders_are_refunded_and_only_with_the_permission(staff):
    order, product = paid_order()
    pending = order_checkout(
        user_id=order.user_id, items=[{"product_id": product.pk, "quantity": 1}]
    )
    viewer = staff_with(*VIEW_ONLY)

    with pytest.raises(OrderInvalidState):
        order_refund(order_id=pending.pk, actor=staff)
    with pytest.raises(StaffActionRefused):
        order_refund(order_id=order.pk, actor=viewer)
    assert list(Order.objects.order_by("pk").values_list("status", flat=True)) == [
        "paid",
        "pending_payment",
    ]
    assert Product.objects.get(pk=product.pk).stock == 7
    assert refunds_recorded(order) == []


@pytest.mark.django_db(transaction=True)
def test_two_refunds_at_once_refund_once(staff):
    coupon = UserCouponFactory()
    order, product = paid_order(coupon)

    run_together([lambda: order_refund(order_id=order.pk, actor=staff)] * 2)

    assert Product.objects.get(pk=product.pk).stock == 10
    assert len(refunds_recorded(order)) == 1


@pytest.mark.django_db
def test_the_admin_refunds_the_selected_paid_orders(client):
    staff = staff_with(*VIEW_ONLY, "orders.refund_order")
    client.force_login(staff)
    order, product = paid_order()
    pending = order_checkout(
        user_id=order.user_id, items=[{"product_id": product.pk, "quantity": 1}]
    )

    response = client.post(
        "/admin/orders/order/",
        {"action": "refund_orders", "_selected_action": [order.pk, pending.pk]},
    )

    assert response.status_code == 302
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert any("Refunded 1 order" in text for text in texts)
    assert any(f"#{pending.pk}" in text for text in texts)
    order.refresh_from_db()
    assert order.status == "refunded"
    assert Product.objects.get(pk=product.pk).stock == 9
