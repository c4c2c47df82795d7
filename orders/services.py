"""Every write to orders. Transactions live here; views and commands only call these.

Lock order, the same in every transaction, so two of them never wait on each other in a circle:
the user row (orders.customers.customer_lock: checkout, pay, cancel, expiry, refund), the order
row (cancel, pay, refund), then product rows by ascending id, then the user coupon row."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils.translation import gettext as _

from api.idempotency import EffectRecord, effect_record_write
from core import clock
from core.money import format_money
from core.staff_audit import NOT_STAFF, StaffAudit
from coupons import ports
from coupons.errors import CouponWithdrawn
from orders.customers import customer_lock, first_order_coupon_check, payer_lock
from orders.errors import (
    AmountMismatch,
    CouponNotAllowed,
    CouponNotApplicable,
    OrderInvalidState,
    OrderNotFound,
    ThresholdNotMet,
    TooManyUnpaidOrders,
)
from orders.lines import OrderLine, ProductQuantity, cart_lines, order_lines_validate
from orders.models import Order, OrderItem, Product
from orders.stock import stock_return, stock_take


def order_checkout(
    *,
    user_id: int,
    items: Sequence[OrderLine],
    coupon_id: int | None = None,
    effect_record: EffectRecord | None = None,
) -> Order:
    """Create a normal order: take stock, price it from the products, use the coupon if any.
    Runs in its own transaction, which writes the order's id into `effect_record` (the
    request's Idempotency-Key, if any); on any error nothing is left behind."""
    lines = order_lines_validate(items)
    # Checked before any lock, so a missing, used or expired coupon fails fast. The order is
    # priced with the terms use_coupon returns under the row lock, not with these.
    if coupon_id is not None:
        ports.get_usable(user_id=user_id, coupon_id=coupon_id)
    return _order_place(
        user_id=user_id,
        order_type=Order.Type.NORMAL,
        lines=lines,
        coupon_id=coupon_id,
        effect_record=effect_record,
    )


def seckill_order_create(
    *, user_id: int, items: Sequence[OrderLine], coupon_id: int | None = None
) -> Order:
    """Create a flash-sale order, in-process only (no endpoint). Refuses any coupon. Runs in
    its own transaction; on any error nothing is left behind."""
    if coupon_id is not None:
        raise CouponNotAllowed()
    lines = order_lines_validate(items)
    return _order_place(
        user_id=user_id,
        order_type=Order.Type.SECKILL,
        lines=lines,
        coupon_id=None,
        effect_record=None,
    )


def _order_place(
    *,
    user_id: int,
    order_type: str,
    lines: list[ProductQuantity],
    coupon_id: int | None,
    effect_record: EffectRecord | None,
) -> Order:
    """One transaction: take stock, price the lines, redeem the coupon if any, write the
    order. Any error rolls all of it back."""
    with transaction.atomic():
        now = clock.now()
        _unpaid_room_check(user_id=user_id, lines=lines)
        products = stock_take(lines)
        cart = cart_lines(lines, products)
        total = sum(line.amount for line in cart)
        line_discounts = [0] * len(cart)
        if coupon_id is not None:
            # The terms as read under the coupon's row lock price the order.
            coupon = ports.use_coupon(user_id=user_id, coupon_id=coupon_id)
            judged = ports.judge_cart(coupon, cart)
            raise_if_not_applied(judged)
            ports.budget_take(coupon=coupon, discount=judged.discount)  # its row last
            line_discounts = list(judged.line_discounts)
        order = _order_create(
            user_id=user_id,
            order_type=order_type,
            lines=lines,
            products=products,
            total=total,
            line_discounts=line_discounts,
            coupon_id=coupon_id,
            now=now,
        )
        effect_record_write(effect_record, effect_id=order.pk)  # committed with the order
        return order


def _unpaid_room_check(*, user_id: int, lines: list[ProductQuantity]) -> None:
    """Raise TooManyUnpaidOrders when the user already holds MAX_UNPAID_ORDERS orders awaiting
    payment, or when this checkout would make the units of a product the user holds unpaid
    more than ORDER_LINE_MAX_QUANTITY (five orders of 10 units each held 50 units of a
    product, more than a small one's stock). The user's row is locked first, so concurrent
    checkouts of one user count one after the other and cannot pass the caps together.
    Inside the checkout's transaction."""
    customer_lock(user_id=user_id)
    pending = Order.objects.filter(user_id=user_id, status=Order.Status.PENDING_PAYMENT)
    if pending.count() >= settings.MAX_UNPAID_ORDERS:
        raise TooManyUnpaidOrders()
    held = dict(
        OrderItem.objects.filter(
            order__in=pending, product_id__in=[line.product_id for line in lines]
        )
        .values_list("product_id")
        .annotate(units=Sum("quantity"))
    )
    cap = settings.ORDER_LINE_MAX_QUANTITY
    for line in lines:
        if held.get(line.product_id, 0) + line.quantity > cap:
            raise TooManyUnpaidOrders(
                _(
                    "You already hold %(held)d of product %(id)s in orders awaiting payment; "
                    "at most %(cap)d may wait unpaid. Pay or cancel one first."
                )
                % {"held": held.get(line.product_id, 0), "id": line.product_id, "cap": cap}
            )


def raise_if_not_applied(judged: ports.CartJudgement) -> None:
    match judged.reason:
        case ports.CartRefusal.NOT_APPLICABLE:
            raise CouponNotApplicable()
        case ports.CartRefusal.THRESHOLD_NOT_MET:
            amounts = {
                "subtotal": format_money(judged.eligible_subtotal),
                "shortfall": format_money(judged.shortfall),
            }
            raise ThresholdNotMet(
                _("The eligible subtotal %(subtotal)s is %(shortfall)s short of the threshold.")
                % amounts
            )


def order_cancel(
    *,
    user_id: int,
    order_id: int,
    audit: StaffAudit = NOT_STAFF,
    effect_record: EffectRecord | None = None,
) -> Order:
    """Cancel the user's pending order: status, stock return and coupon return commit together
    or not at all, with the order's id in `effect_record`. Staff cancel it for the user with
    an `audit` (orders.cancel_order, recorded); the shopper's own cancel passes none. Runs in
    its own transaction."""
    audit.check()
    with transaction.atomic():
        customer_lock(user_id=user_id)
        order = _cancel_pending(Order.objects.filter(pk=order_id, user_id=user_id))
        if order is None:
            if not Order.objects.filter(pk=order_id, user_id=user_id).exists():
                raise OrderNotFound()
            raise OrderInvalidState(_("Only an order awaiting payment can be cancelled."))
        effect_record_write(effect_record, effect_id=order.pk)
        audit.record(
            order,
            {
                "pay_amount": order.pay_amount,
                "coupon_returned": order.coupon_id is not None,
            },
        )
    return order


def order_expire(*, order_id: int, user_id: int | None = None) -> bool:
    """Cancel the order if it is still awaiting payment after expire_at, through the same path
    as a user's cancel (its user's row locked first: `user_id`, looked up when not given).
    Runs in its own transaction. False when there was nothing to do (paid, already
    cancelled, or a user's cancel won the race)."""
    if user_id is None:
        user_id = Order.objects.filter(pk=order_id).values_list("user_id", flat=True).first()
    if user_id is None:
        return False
    with transaction.atomic():
        customer_lock(user_id=user_id)
        expired = Order.objects.filter(pk=order_id, expire_at__lt=clock.now())
        return _cancel_pending(expired) is not None


def order_pay(
    *, user_id: int, order_id: int, amount: int, effect_record: EffectRecord | None = None
) -> Order:
    """Record the payment of a pending order (pending_payment -> paid); `amount` must equal
    pay_amount; an order whose coupon is for a first paid order only is refused once the user
    has paid for another (CouponNotEligible), and one whose coupon was taken back since
    (CouponWithdrawn). Runs in its own transaction."""
    with transaction.atomic():
        first_order_coupon = payer_lock(user_id=user_id, order_id=order_id)
        # The row lock orders this against a concurrent cancel or expiry of the same order.
        order = Order.objects.select_for_update().filter(pk=order_id, user_id=user_id).first()
        if order is None:
            raise OrderNotFound()
        now = clock.now()
        if order.status != Order.Status.PENDING_PAYMENT:
            raise OrderInvalidState(
                _("An order that is %(status)s cannot be paid.")
                % {"status": order.get_status_display()}
            )
        if now > order.expire_at:
            # Past its deadline the order belongs to the expiry job, even before it runs.
            raise OrderInvalidState(_("The payment window of this order has closed."))
        if amount != order.pay_amount:
            raise AmountMismatch(
                _("This order asks for %(asked)s, not %(paid)s.")
                % {"asked": format_money(order.pay_amount), "paid": format_money(amount)}
            )
        if first_order_coupon:
            first_order_coupon_check(user_id=user_id, order_id=order_id)
        if order.coupon_id is not None and ports.coupon_withdrawn(coupon_id=order.coupon_id):
            raise CouponWithdrawn()
        order.status = Order.Status.PAID
        order.paid_at = now
        order.updated_at = now
        order.save(update_fields=["status", "paid_at", "updated_at"])
        ports.order_paid(order_id=order.pk, user_id=user_id, pay_amount=order.pay_amount)
        effect_record_write(effect_record, effect_id=order.pk)
    return order


def _order_create(
    *,
    user_id: int,
    order_type: str,
    lines: list[ProductQuantity],
    products: dict[int, Product],
    total: int,
    line_discounts: list[int],
    coupon_id: int | None,
    now: datetime,
) -> Order:
    discount = sum(line_discounts)
    order = Order.objects.create(
        user_id=user_id,
        order_type=order_type,
        total_amount=total,
        discount_amount=discount,
        pay_amount=total - discount,
        coupon_id=coupon_id,
        expire_at=now + timedelta(minutes=settings.ORDER_PAYMENT_TIMEOUT_MINUTES),
        created_at=now,
        updated_at=now,
    )
    OrderItem.objects.bulk_create(
        OrderItem(
            order=order,
            product_id=line.product_id,
            title=products[line.product_id].name,
            unit_price=products[line.product_id].price,
            quantity=line.quantity,
            discount_amount=line_discount,
        )
        for line, line_discount in zip(lines, line_discounts, strict=True)
    )
    return order


def _cancel_pending(orders: QuerySet[Order]) -> Order | None:
    """Cancel the one order in `orders` if it is pending payment, returning it; None when it
    is not (any more). The status re-read under the row lock is what lets exactly one of any
    number of concurrent cancels (user or expiry) and payments win. Inside a transaction."""
    now = clock.now()
    order = orders.filter(status=Order.Status.PENDING_PAYMENT).first()
    if order is None:
        return None
    # Lock the row by primary key first, as order_pay does. An UPDATE filtered on status may be
    # served through the (status, expire_at) index, locking that entry before the row; with a
    # payment holding the row and updating the same entry, MariaDB reported a deadlock.
    status = (
        Order.objects.select_for_update()
        .filter(pk=order.pk)
        .values_list("status", flat=True)
        .first()
    )
    if status != Order.Status.PENDING_PAYMENT:
        return None  # another cancel or a payment committed between the read and the lock
    Order.objects.filter(pk=order.pk).update(
        status=Order.Status.CANCELLED, cancelled_at=now, updated_at=now
    )
    stock_return(order)
    if order.coupon_id is not None:
        ports.rollback_coupon(user_id=order.user_id, coupon_id=order.coupon_id)
    # What the UPDATE wrote, without reading the row back.
    order.status, order.cancelled_at, order.updated_at = Order.Status.CANCELLED, now, now
    return order


@dataclass(frozen=True)
class ExpiryRun:
    cancelled: int
    skipped: int  # paid or cancelled by the user meanwhile


EXPIRY_BATCH_SIZE = 500


def orders_expire_overdue(
    *, batch_size: int = EXPIRY_BATCH_SIZE, on_batch: Callable[[ExpiryRun], None] | None = None
) -> ExpiryRun:
    """Cancel every order still awaiting payment after expire_at, one order per transaction
    (order_expire), so stock and coupon come back as on a user's cancel. Safe to run
    concurrently with itself and with users. `on_batch` hears the running totals."""
    now = clock.now()
    cancelled = skipped = 0
    last_id = 0
    while True:
        # Keyset pages over a snapshot of candidates; each one is re-checked under its own
        # conditional UPDATE, so one a user cancelled or paid meanwhile is skipped.
        batch = list(
            Order.objects.filter(
                status=Order.Status.PENDING_PAYMENT, expire_at__lt=now, pk__gt=last_id
            )
            .order_by("pk")
            .values_list("pk", "user_id")[:batch_size]
        )
        if not batch:
            return ExpiryRun(cancelled=cancelled, skipped=skipped)
        for order_id, user_id in batch:
            if order_expire(order_id=order_id, user_id=user_id):
                cancelled += 1
            else:
                skipped += 1
        last_id = batch[-1][0]
        if on_batch is not None:
            on_batch(ExpiryRun(cancelled=cancelled, skipped=skipped))
