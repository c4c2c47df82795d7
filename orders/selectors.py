"""Every read of orders that is more than one line."""

from dataclasses import dataclass

from django.db.models import QuerySet
from django.urls import reverse

from config import clock
from coupons import ports
from orders.errors import OrderNotFound
from orders.models import Order


def orders_for_user(*, user_id: int) -> QuerySet[Order]:
    """The user's orders, newest first, with their lines in one extra query per page."""
    return Order.objects.filter(user_id=user_id).prefetch_related("items").order_by("-id")


def order_for_user(*, user_id: int, order_id: int) -> Order:
    """One of the user's orders; someone else's is "not found"."""
    order = orders_for_user(user_id=user_id).filter(pk=order_id).first()
    if order is None:
        raise OrderNotFound()
    return order


@dataclass(frozen=True)
class CouponOption:
    coupon: ports.UsableCoupon
    usable: bool
    discount: int
    reason: str | None  # "not_started" or "threshold_not_met" when not usable
    shortfall: int | None  # cents still to spend, for threshold_not_met


def coupon_options(*, user_id: int, amount: int) -> list[CouponOption]:
    """The user's unused, unexpired coupons judged against an order total of `amount` cents:
    usable ones by the discount they give, best first, then the unusable ones, closest first."""
    now = clock.now()
    options = []
    for coupon in ports.list_unused(user_id):
        if now < coupon.valid_from:
            options.append(CouponOption(coupon, False, 0, "not_started", None))
        elif amount < coupon.min_amount:
            shortfall = coupon.min_amount - amount
            options.append(CouponOption(coupon, False, 0, "threshold_not_met", shortfall))
        else:
            options.append(CouponOption(coupon, True, min(coupon.value, amount), None, None))
    # Among equal discounts, the one that expires first is the one to spend first.
    return sorted(
        options,
        key=lambda option: (
            not option.usable,
            -option.discount,
            option.shortfall or 0,
            -option.coupon.value,
            option.coupon.valid_until,
            option.coupon.coupon_id,
        ),
    )


def orders_using_coupons(
    *, template_id: int | None = None, coupon_ids: list[int] | None = None, limit: int = 10
) -> list[ports.CouponOrder]:
    """Newest orders that carry one of `coupon_ids`, or any coupon of `template_id` (cancelled
    ones too: their coupon went back). The coupons admin calls this through the
    COUPON_ADMIN_ORDERS_LOOKUP setting; one query."""
    orders = Order.objects.exclude(coupon=None)
    if template_id is not None:
        orders = orders.filter(coupon__template_id=template_id)
    if coupon_ids is not None:
        orders = orders.filter(coupon_id__in=coupon_ids)
    return [
        ports.CouponOrder(
            order_id=order.pk,
            coupon_id=order.coupon_id,
            status=order.status,
            total_amount=order.total_amount,
            discount_amount=order.discount_amount,
            pay_amount=order.pay_amount,
            created_at=order.created_at,
            admin_url=reverse("admin:orders_order_change", args=[order.pk]),
        )
        for order in orders.order_by("-id")[:limit]
    ]
