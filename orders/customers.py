"""Customers' order history as coupons sees it (coupons.customers.CustomerHistory), registered
by the setting COUPON_CUSTOMER_HISTORY: a new-customers coupon asks whether a user has ever
paid, without coupons importing us. And the payment's side of that rule: a coupon for a first
paid order only pays for one order (SPEC section 20)."""

from django.contrib.auth import get_user_model
from django.utils.translation import gettext as _

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

    def paid_among(self, *, user_ids: list[int]) -> set[int]:
        paid = Order.objects.filter(user_id__in=user_ids, paid_at__isnull=False)
        return set(paid.values_list("user_id", flat=True).distinct())


def customer_lock(*, user_id: int) -> None:
    """Lock the user's row: the first lock of every transaction that changes a user's orders
    or coupons (checkout, pay, cancel, expiry, refund; the lock order of orders/services.py).
    InnoDB reads it too when a user coupon's row changes (its foreign key check, a shared
    lock), so taking it later than the order's row deadlocked a payment with a cancel."""
    get_user_model().objects.select_for_update().filter(pk=user_id).values_list("pk").first()


def payer_lock(*, user_id: int, order_id: int) -> bool:
    """Inside a payment's transaction, before the order's row lock: lock the user's row, so
    that every payment of one user, with a coupon or without, is decided after the one before
    it commits; and say whether the order carries a coupon for a first paid order only (then
    `first_order_coupon_check`). Locking only for such orders let a plain payment commit
    beside one and the coupon pay for a second paid order."""
    customer_lock(user_id=user_id)
    coupon_id = (
        Order.objects.filter(pk=order_id, user_id=user_id)
        .values_list("coupon_id", flat=True)
        .first()
    )
    return coupon_id is not None and ports.first_paid_order_only(coupon_id=coupon_id)


def first_order_coupon_check(*, user_id: int, order_id: int) -> None:
    """Refuse (CouponNotEligible) to pay for this order when the user has paid for another:
    its coupon was for the first paid order only; the refusal says how to go on. After
    `payer_lock`."""
    paid = Order.objects.filter(user_id=user_id, paid_at__isnull=False).exclude(pk=order_id)
    if paid.exists():
        raise CouponNotEligible(
            _(
                "This order's coupon is for a first paid order only, and another order of "
                "yours has been paid. Cancel this order to get the coupon back, then check "
                "out again without it."
            )
        )
