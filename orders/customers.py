"""Customers' order history as coupons sees it (coupons.customers.CustomerHistory), registered
by the setting COUPON_CUSTOMER_HISTORY: a new-customers coupon asks whether a user has ever
paid, without coupons importing us. And the payment's side of that rule: a coupon for a first
paid order only pays for one order (SPEC section 20)."""

from django.contrib.auth import get_user_model

from coupons import ports
from coupons.errors import CouponNotEligible
from orders.models import Order


class OrdersCustomerHistory:
    def has_paid_order(self, *, user_id: int, using: str = "default") -> bool:
        # paid_at is set when an order is paid and never cleared (shipped, completed and
        # refunded keep it; only pending orders are cancelled), so the answer never goes back
        # to False.
        paid = Order.objects.using(using).filter(user_id=user_id, paid_at__isnull=False)
        return paid.exists()


def first_order_coupon_lock(*, user_id: int, order_id: int) -> bool:
    """Inside a payment's transaction, before the order's row lock: whether the order carries
    a coupon for a first paid order only; if so the user's row is locked (the lock order of
    orders/services.py: user, then order), so two such payments of one user are decided one
    after the other by `first_order_coupon_check`."""
    coupon_id = (
        Order.objects.filter(pk=order_id, user_id=user_id)
        .values_list("coupon_id", flat=True)
        .first()
    )
    if coupon_id is None or not ports.first_paid_order_only(coupon_id=coupon_id):
        return False
    get_user_model().objects.select_for_update().filter(pk=user_id).values_list("pk").first()
    return True


def first_order_coupon_check(*, user_id: int, order_id: int) -> None:
    """Refuse (CouponNotEligible) to pay for this order when the user has paid for another:
    its coupon was for the first paid order only. After `first_order_coupon_lock`."""
    paid = Order.objects.filter(user_id=user_id, paid_at__isnull=False).exclude(pk=order_id)
    if paid.exists():
        raise CouponNotEligible()
