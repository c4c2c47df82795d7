"""Refunds (SPEC sections 20 and 25): staff give money back for a paid order (paid, shipped or
completed), whole or some units of some lines, always with a reason. The refunded units come
back to stock; the coupon comes back only when the last unit of the order is refunded and
while its own window is open. Each refund is a Refund row and one audit entry with its amount
and reason. Under the lock order of orders/services.py (decision 0015): the user row, the
order row, then products by ascending id, then the user coupon row, as a cancel takes them."""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from api.idempotency import EffectRecord, effect_record_write
from core import clock
from core.staff_audit import NOT_STAFF, StaffAudit
from coupons import ports
from orders.customers import customer_lock
from orders.errors import OrderInvalid, OrderInvalidState, OrderNotFound
from orders.models import PAID_STATUSES, REFUND_REASON_MAX_LENGTH, Order, OrderItem, Product, Refund


@dataclass(frozen=True)
class RefundOutcome:
    order: Order
    refund: Refund | None  # None: the order was refunded whole already, nothing done


def order_refund(
    *,
    order_id: int,
    reason: str,
    lines: dict[int, int] | None = None,
    refunded_by_id: int | None = None,
    audit: StaffAudit = NOT_STAFF,
    effect_record: EffectRecord | None = None,
) -> RefundOutcome:
    """Refund `lines` (order line id -> units) of a paid, shipped or completed order, or every
    unit not yet refunded (None). The money of a line is its paid amount (price x quantity less
    its part of the discount) split over its units, the last unit taking the remainder, so the
    refunds of an order add up to its pay amount exactly. Once every unit is refunded the order
    is `refunded` and its coupon goes back to unused while its window is open.

    `reason` is required (1 to 500 characters). `refunded_by_id` is the staff member kept on the
    refund; the door's `audit` asks orders.refund_order and records the refund. A whole refund
    of an order refunded already does nothing (RefundOutcome with no refund). Raises
    OrderNotFound, OrderInvalid (400 naming `reason` or `lines`) and OrderInvalidState (the
    order was never paid, or was cancelled)."""
    audit.check()
    reason = _reason_validated(reason)
    user_id = Order.objects.filter(pk=order_id).values_list("user_id", flat=True).first()
    if user_id is None:
        raise OrderNotFound()
    with transaction.atomic():
        customer_lock(user_id=user_id)
        # Then the order's row, by primary key, as cancel and pay lock it.
        order = Order.objects.select_for_update().filter(pk=order_id).first()
        if order is None:
            raise OrderNotFound()
        if order.status == Order.Status.REFUNDED and lines is None:
            return RefundOutcome(order=order, refund=None)
        if order.status not in PAID_STATUSES:
            raise OrderInvalidState(
                _(
                    "Only a paid, shipped or completed order can be refunded; "
                    "this one is %(status)s."
                )
                % {"status": order.get_status_display()}
            )
        items = list(order.items.order_by("product_id"))
        units = _units_validated(items, lines)
        now = clock.now()
        amount = refund_money(items, units)
        for item in items:  # ascending product id: the stock's lock order
            count = units.get(item.pk, 0)
            if count == 0:
                continue
            OrderItem.objects.filter(pk=item.pk).update(
                refunded_quantity=F("refunded_quantity") + count
            )
            Product.objects.filter(pk=item.product_id).update(stock=F("stock") + count)
            item.refunded_quantity += count
        whole = all(item.refunded_quantity == item.quantity for item in items)
        coupon_returned = False
        if whole:  # what the payment earned goes; the coupon's row last
            ports.order_refunded(order_id=order.pk)
        if whole and order.coupon_id is not None:
            coupon_returned = ports.refund_coupon(user_id=order.user_id, coupon_id=order.coupon_id)
        order.refunded_amount += amount
        order.updated_at = now
        changed = {"refunded_amount": order.refunded_amount, "updated_at": now}
        if whole:
            order.status, order.refunded_at = Order.Status.REFUNDED, now
            changed |= {"status": order.status, "refunded_at": now}
        Order.objects.filter(pk=order.pk).update(**changed)
        refund = Refund.objects.create(
            order=order,
            amount=amount,
            reason=reason,
            lines={str(item_id): count for item_id, count in sorted(units.items())},
            coupon_returned=coupon_returned,
            refunded_by_id=refunded_by_id,
            created_at=now,
        )
        effect_record_write(effect_record, effect_id=refund.pk)  # committed with the refund
        coupon = "none" if order.coupon_id is None else "kept"
        if coupon_returned:
            coupon = "returned"
        elif not whole and order.coupon_id is not None:
            coupon = "kept_partial"
        audit.record(
            order,
            {
                "amount": amount,
                "reason": reason,
                "whole": whole,
                "stock_returned": {
                    str(item.product_id): units[item.pk] for item in items if item.pk in units
                },
                "coupon": coupon,
            },
        )
    return RefundOutcome(order=order, refund=refund)


def _reason_validated(reason: object) -> str:
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        raise OrderInvalid(fields={"reason": [_("Say why the money goes back.")]})
    if len(text) > REFUND_REASON_MAX_LENGTH:
        raise OrderInvalid(
            fields={
                "reason": [_("At most %(count)d characters.") % {"count": REFUND_REASON_MAX_LENGTH}]
            }
        )
    return text


def _units_validated(items: list[OrderItem], lines: dict[int, int] | None) -> dict[int, int]:
    """Line id -> units to refund: every unit not yet refunded, or `lines` checked against
    what each line has left (400 naming `lines`)."""
    left = {item.pk: item.quantity - item.refunded_quantity for item in items}
    if lines is None:
        return {item_id: count for item_id, count in left.items() if count > 0}
    if not lines:
        raise OrderInvalid(fields={"lines": [_("Name at least one line to refund.")]})
    for item_id, count in lines.items():
        if item_id not in left:
            raise OrderInvalid(
                fields={"lines": [_("Line %(line)s is not in this order.") % {"line": item_id}]}
            )
        if not 1 <= count <= left[item_id]:
            raise OrderInvalid(
                fields={
                    "lines": [
                        _("Line %(line)s has %(left)d unit(s) left to refund; %(count)s asked.")
                        % {"line": item_id, "left": left[item_id], "count": count}
                    ]
                }
            )
    return dict(lines)


def refund_money(items: list[OrderItem], units: dict[int, int]) -> int:
    """What refunding `units` (line id -> units) of these lines gives back, in cents, as
    order_refund computes it: what the staff member is shown before confirming."""
    return sum(
        _line_money(item, item.refunded_quantity + units[item.pk])
        - _line_money(item, item.refunded_quantity)
        for item in items
        if units.get(item.pk)
    )


def _line_money(item: OrderItem, units: int) -> int:
    """What the first `units` units of a line cost the shopper, in cents: its paid amount
    split evenly, rounded down, so that all of them cost exactly the paid amount."""
    paid = item.unit_price * item.quantity - item.discount_amount
    return paid * units // item.quantity
