"""Every read of orders that is more than one line."""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from django.db.models import QuerySet

from core import clock
from coupons import ports
from orders.customers import OrdersCustomerHistory
from orders.errors import OrderNotFound, ProductNotFound
from orders.lines import OrderLine, cart_lines, order_lines_validate
from orders.models import Order, Product


def orders_for_user(*, user_id: int) -> QuerySet[Order]:
    """The user's orders, newest first, with their lines in one extra query per page."""
    return Order.objects.filter(user_id=user_id).prefetch_related("items").order_by("-id")


def products_listed() -> QuerySet[Product]:
    """The catalog, in id order, each product with its category in the same query."""
    return Product.objects.select_related("category").order_by("id")


def order_for_user(*, user_id: int, order_id: int) -> Order:
    """One of the user's orders; someone else's is "not found"."""
    order = orders_for_user(user_id=user_id).filter(pk=order_id).first()
    if order is None:
        raise OrderNotFound()
    return order


class OptionReason(StrEnum):
    """Why a coupon of the user's is not usable on this cart. Unusable options come after the
    usable ones in this order: the nearest to usable first."""

    NOT_STARTED = "not_started"  # its own use window has not opened
    THRESHOLD_NOT_MET = ports.CartRefusal.THRESHOLD_NOT_MET.value
    NOT_APPLICABLE = ports.CartRefusal.NOT_APPLICABLE.value  # no line of the cart in scope
    CART_REQUIRED = "cart_required"  # a scoped coupon asked about a bare amount
    NOT_ELIGIBLE = "not_eligible"  # for a first paid order only, and the user has paid
    BUDGET_EXHAUSTED = "budget_exhausted"  # its campaign's budget cannot cover the discount


@dataclass(frozen=True)
class CouponOption:
    coupon: ports.UsableCoupon
    usable: bool
    discount: int
    reason: OptionReason | None  # None when usable
    shortfall: int | None  # eligible cents still to spend, for THRESHOLD_NOT_MET
    eligible_subtotal: int | None  # None when judged on a bare amount


REASON_RANK: dict[OptionReason | None, int] = {
    None: 0,
    **{reason: rank for rank, reason in enumerate(OptionReason, start=1)},
}


def coupon_options(
    *, user_id: int, amount: int | None = None, items: Sequence[OrderLine] | None = None
) -> list[CouponOption]:
    """The user's unused, unexpired coupons judged against a cart (`items`, as for checkout:
    scope, type, cap and threshold) or a bare order total (`amount`: store-wide coupons only):
    usable ones by the discount they give, best first, then the unusable ones, closest first."""
    now = clock.now()
    cart = None if items is None else _cart_for_items(items)
    coupons = ports.list_unused(user_id=user_id)
    paid_before = any(c.first_paid_order_only for c in coupons) and (
        OrdersCustomerHistory().has_paid_order(user_id=user_id)
    )
    options = []
    for coupon in coupons:
        if coupon.first_paid_order_only and paid_before:  # checkout would refuse it
            options.append(CouponOption(coupon, False, 0, OptionReason.NOT_ELIGIBLE, None, None))
            continue
        options.append(_option(coupon, cart=cart, amount=amount or 0, now=now))
    # Among equal discounts, the one that expires first is the one to spend first.
    return sorted(
        options,
        key=lambda option: (
            REASON_RANK[option.reason],
            -option.discount,
            option.shortfall or 0,
            option.coupon.valid_until,
            option.coupon.coupon_id,
        ),
    )


def _option(
    coupon: ports.UsableCoupon, *, cart: list[ports.CartLine] | None, amount: int, now
) -> CouponOption:
    if now < coupon.valid_from:
        return CouponOption(coupon, False, 0, OptionReason.NOT_STARTED, None, None)
    if cart is None:
        if coupon.scope != "all":
            return CouponOption(coupon, False, 0, OptionReason.CART_REQUIRED, None, None)
        # A bare amount is one store-wide line.
        cart_of_amount = [ports.CartLine(product_id=0, category_id=None, amount=amount)]
        judged = ports.judge_cart(coupon, cart_of_amount)
    else:
        judged = ports.judge_cart(coupon, cart)
    eligible = judged.eligible_subtotal if cart is not None else None
    if judged.reason is not None:
        reason = OptionReason(judged.reason.value)
        return CouponOption(coupon, False, 0, reason, judged.shortfall, eligible)
    if coupon.budget_left is not None and judged.discount > coupon.budget_left:
        return CouponOption(coupon, False, 0, OptionReason.BUDGET_EXHAUSTED, None, eligible)
    return CouponOption(coupon, True, judged.discount, None, None, eligible)


def _cart_for_items(items: Sequence[OrderLine]) -> list[ports.CartLine]:
    """The cart priced at today's prices, without taking stock. Unknown products are 404."""
    lines = order_lines_validate(items)
    products = Product.objects.in_bulk([line.product_id for line in lines])
    missing = [line.product_id for line in lines if line.product_id not in products]
    if missing:
        raise ProductNotFound(f"Product {missing[0]} not found.")
    return cart_lines(lines, products)
