"""Refunds (SPEC section 20): staff give a paid order's money back. The stock comes back, and
the coupon too while its own window is open; recorded in the order's history. Under the lock
order of orders/services.py (decision 0015): the user row, the order row, then products by
ascending id, then the user coupon row, as a cancel takes them."""

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.staff_actions import Actor, StaffAction, staff_action_check, staff_action_record
from core import clock
from coupons import ports
from orders.customers import customer_lock
from orders.errors import OrderInvalidState, OrderNotFound
from orders.models import Order
from orders.services import stock_return


def order_refund(*, order_id: int, actor: Actor | None = None) -> Order:
    """Refund a paid order (paid -> refunded): its stock returned, its coupon back to unused if
    the coupon's window is still open (else it stays used), all in one transaction. `actor`
    must hold orders.refund_order and is recorded with the amounts. Idempotent: an order
    already refunded is returned as it is, nothing done or recorded again. Only a paid order
    (not yet shipped) can be refunded: OrderInvalidState otherwise."""
    staff_action_check(actor=actor, action=StaffAction.ORDER_REFUND)
    user_id = Order.objects.filter(pk=order_id).values_list("user_id", flat=True).first()
    if user_id is None:
        raise OrderNotFound()
    with transaction.atomic():
        customer_lock(user_id=user_id)
        # Then the order's row, by primary key, as cancel and pay lock it.
        order = Order.objects.select_for_update().filter(pk=order_id).first()
        if order is None:
            raise OrderNotFound()
        if order.status == Order.Status.REFUNDED:
            return order
        if order.status != Order.Status.PAID:
            raise OrderInvalidState(
                _("Only a paid order can be refunded; this one is %(status)s.")
                % {"status": order.get_status_display()}
            )
        now = clock.now()
        Order.objects.filter(pk=order.pk).update(
            status=Order.Status.REFUNDED, refunded_at=now, updated_at=now
        )
        stock_return(order)  # products by ascending id
        coupon = "none"
        if order.coupon_id is not None:  # the coupon's row last
            returned = ports.refund_coupon(user_id=order.user_id, coupon_id=order.coupon_id)
            coupon = "returned" if returned else "kept"
        order.status, order.refunded_at, order.updated_at = Order.Status.REFUNDED, now, now
        staff_action_record(
            actor=actor,
            action=StaffAction.ORDER_REFUND,
            target=order,
            amounts={
                "pay_amount": order.pay_amount,
                "stock_returned": {
                    str(item.product_id): item.quantity for item in order.items.all()
                },
                "coupon": coupon,
            },
        )
    return order
