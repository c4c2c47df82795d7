"""What the orders app may ask of coupons, in-process. Plain functions in, frozen dataclasses out,
typed errors from coupons.errors; no model instance ever crosses this line.

The writes (use_coupon, rollback_coupon) must run inside the caller's transaction, so that the
coupon changes state together with the order or not at all."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils.functional import Promise

from core import clock
from coupons.auto_issue.events import paid_order_tasks, refunded_order_withdraw
from coupons.campaign_budget import budget_give_back
from coupons.campaign_budget import budget_take as campaign_budget_take
from coupons.coupon_status import CouponStatus
from coupons.customers import customer_history
from coupons.discounts import CartJudgement, CartLine, CartRefusal, DiscountTerms, judge_cart
from coupons.errors import (
    CouponExpired,
    CouponNotEligible,
    CouponNotFound,
    CouponRollbackFailed,
    CouponUsed,
)
from coupons.models import CouponTemplate, UserCoupon

__all__ = [
    "COUPON_SCOPE_CHOICES",
    "COUPON_TYPE_CHOICES",
    "CartJudgement",
    "CartLine",
    "CartRefusal",
    "TransactionRequired",
    "UsableCoupon",
    "budget_take",
    "first_paid_order_only",
    "get_usable",
    "judge_cart",
    "list_unused",
    "order_paid",
    "order_refunded",
    "refund_coupon",
    "rollback_coupon",
    "use_coupon",
]

# The kinds of coupon and of scope a UsableCoupon may name, with labels (for the orders API's
# schema, so both apps' enums are one).
COUPON_TYPE_CHOICES: Sequence[tuple[str, str | Promise]] = CouponTemplate.Type.choices
COUPON_SCOPE_CHOICES: Sequence[tuple[str, str | Promise]] = CouponTemplate.Scope.choices


class TransactionRequired(RuntimeError):
    """A programming error: a port that writes was called outside a transaction."""


@dataclass(frozen=True, kw_only=True)
class UsableCoupon(DiscountTerms):
    """A user's coupon: its discount terms (judge_cart takes it as they are) and its own use
    window, stamped when it was issued, and its template's name (what the shopper sees)."""

    coupon_id: int
    template_id: int
    name: str
    valid_from: datetime
    valid_until: datetime
    first_paid_order_only: bool = False  # a new-customers coupon (SPEC section 20)
    campaign_id: int | None = None  # whose budget its discount draws on (SPEC section 27)
    budget_left: int | None = None  # of that budget, as read; None: no budget


def get_usable(*, user_id: int, coupon_id: int) -> UsableCoupon:
    """Read the user's coupon and say whether it can be used now. Writes nothing; needs no
    transaction. The threshold is the caller's to check against its own total."""
    coupon = _owned_coupon(user_id, coupon_id)
    _raise_if_unusable(coupon, clock.now())
    _raise_if_paid_before(coupon)
    return _usable(coupon)


def use_coupon(*, user_id: int, coupon_id: int) -> UsableCoupon:
    """Mark the coupon used (unused -> used, used_at = now) while its own window covers now,
    and return its terms as read under the row lock: the caller prices the order with these.
    Must run inside the caller's transaction; of any number of concurrent calls exactly one
    succeeds, the others raise CouponUsed."""
    _require_transaction("use_coupon")
    now = clock.now()
    # One statement on the coupon's own row (its window is stamped on it): InnoDB re-evaluates
    # the WHERE on the latest row after any wait, so the status guard cannot be stale.
    changed = UserCoupon.objects.filter(
        pk=coupon_id,
        user_id=user_id,
        status=UserCoupon.Status.UNUSED,
        valid_from__lte=now,
        valid_until__gte=now,
    ).update(status=UserCoupon.Status.USED, used_at=now, updated_at=now)
    coupon = _owned_coupon(user_id, coupon_id)
    if not changed:
        # Nothing changed: the re-read says why. It sees the winner's commit (READ COMMITTED).
        _raise_if_unusable(coupon, now)
        raise CouponUsed()  # unreachable unless the row changed between the two statements
    # Read in the caller's transaction, after its lock on the user's row (orders/services.py)
    _raise_if_paid_before(coupon)
    return _usable(coupon)


def budget_take(*, coupon: UsableCoupon, discount: int) -> None:
    """Spend `discount` of the coupon's campaign budget for the order the caller is writing,
    and note it on the coupon (given back by rollback_coupon and refund_coupon); raise
    BudgetExhausted, changing nothing, when what is left cannot cover it. Must run inside the
    caller's transaction, after use_coupon: the campaign's row is the last it locks."""
    _require_transaction("budget_take")
    if coupon.campaign_id is None or discount <= 0:
        return
    campaign_budget_take(campaign_id=coupon.campaign_id, amount=discount)
    UserCoupon.objects.filter(pk=coupon.coupon_id).update(
        charged_campaign_id=coupon.campaign_id, charged_amount=discount
    )


def _budget_give_back(coupon_id: int) -> None:
    """What budget_take noted on the coupon goes back to that campaign (the coupon's row, then
    the campaign's: the lock order of a checkout)."""
    charged = (
        UserCoupon.objects.filter(pk=coupon_id, charged_amount__gt=0)
        .values_list("charged_campaign_id", "charged_amount")
        .first()
    )
    if charged is None:
        return
    UserCoupon.objects.filter(pk=coupon_id).update(charged_campaign_id=None, charged_amount=0)
    budget_give_back(campaign_id=charged[0], amount=charged[1])


def order_paid(*, order_id: int, user_id: int, pay_amount: int) -> None:
    """An order was paid: record the coupons it earns (SPEC section 28), issued shortly after
    by the scheduler. Must run inside the payment's transaction: nothing is earned unless the
    payment commits, and a retried payment earns nothing twice."""
    _require_transaction("order_paid")
    paid_order_tasks(order_id=order_id, user_id=user_id, pay_amount=pay_amount)


def order_refunded(*, order_id: int) -> None:
    """An order was refunded whole: what it earned and is not used yet is withdrawn. Must run
    inside the refund's transaction."""
    _require_transaction("order_refunded")
    refunded_order_withdraw(order_id=order_id)


def coupon_withdrawn(*, coupon_id: int) -> bool:
    """Whether the coupon was taken back (the order that earned it was refunded whole): the
    orders app then refuses to pay for an order holding it. Writes nothing."""
    return UserCoupon.objects.filter(pk=coupon_id, withdrawn_at__isnull=False).exists()


def first_paid_order_only(*, coupon_id: int) -> bool:
    """Whether the coupon is for a user's first paid order only (a new-customers template,
    SPEC sections 18 and 20): the orders app then refuses to pay for a second order with it.
    Writes nothing."""
    return UserCoupon.objects.filter(
        pk=coupon_id, template__audience=CouponTemplate.Audience.NEW_CUSTOMERS
    ).exists()


def rollback_coupon(*, user_id: int, coupon_id: int) -> None:
    """Give a used coupon back (used -> unused, used_at cleared). Must run inside the caller's
    transaction; when the coupon is not in use it raises CouponRollbackFailed, which should
    abort that transaction."""
    _require_transaction("rollback_coupon")
    changed = UserCoupon.objects.filter(
        pk=coupon_id, user_id=user_id, status=UserCoupon.Status.USED
    ).update(status=UserCoupon.Status.UNUSED, used_at=None, updated_at=clock.now())
    if not changed:
        raise CouponRollbackFailed()
    _budget_give_back(coupon_id)


def refund_coupon(*, user_id: int, coupon_id: int) -> bool:
    """Give a used coupon back (used -> unused) for a refunded order while its own window is
    still open; past it the coupon stays used (and so never counts as expired). Its discount
    goes back to its campaign's budget either way: a refunded order gave nothing away. Returns
    whether the coupon came back. Must run inside the caller's transaction."""
    _require_transaction("refund_coupon")
    now = clock.now()
    returned = UserCoupon.objects.filter(
        pk=coupon_id, user_id=user_id, status=UserCoupon.Status.USED, valid_until__gte=now
    ).update(status=UserCoupon.Status.UNUSED, used_at=None, updated_at=now)
    _budget_give_back(coupon_id)
    return bool(returned)


def list_unused(*, user_id: int) -> list[UsableCoupon]:
    """The user's coupons that are stored unused and not yet expired (including ones whose
    window has not started), newest first. Writes nothing; needs no transaction."""
    coupons = (
        UserCoupon.objects.select_related("template__campaign")
        .filter(user_id=user_id)
        .with_status(CouponStatus.UNUSED, now=clock.now())
        .order_by("-id")
    )
    return [_usable(coupon) for coupon in coupons]


def _require_transaction(port: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise TransactionRequired(f"{port} must run inside the caller's transaction.")


def _owned_coupon(user_id: int, coupon_id: int) -> UserCoupon:
    # Another user's coupon is "not found": its existence is none of the caller's business.
    coupon = (
        UserCoupon.objects.select_related("template__campaign")
        .filter(pk=coupon_id, user_id=user_id)
        .first()
    )
    if coupon is None:
        raise CouponNotFound()
    return coupon


def _raise_if_unusable(coupon: UserCoupon, now: datetime) -> None:
    if coupon.status == UserCoupon.Status.USED:
        raise CouponUsed()
    if not coupon.valid_from <= now <= coupon.valid_until:
        raise CouponExpired()


def _raise_if_paid_before(coupon: UserCoupon) -> None:
    """A new-customers coupon is for the first paid order only: not once the user has paid."""
    if coupon.template.audience != CouponTemplate.Audience.NEW_CUSTOMERS:
        return
    if customer_history().has_paid_order(user_id=coupon.user_id):
        raise CouponNotEligible()


def _usable(coupon: UserCoupon) -> UsableCoupon:
    template = coupon.template
    # The template's discount terms are frozen once it has claims, so they are the terms the
    # coupon was issued with.
    return UsableCoupon(
        coupon_id=coupon.pk,
        template_id=template.pk,
        name=template.name,
        type=template.type,
        value=template.value,
        min_amount=template.min_amount,
        max_discount=template.max_discount,
        scope=template.scope,
        scope_ids=tuple(template.scope_ids),
        excluded_product_ids=tuple(template.excluded_product_ids),
        excluded_category_ids=tuple(template.excluded_category_ids),
        one_unit_only=template.one_unit_only,
        valid_from=coupon.valid_from,
        valid_until=coupon.valid_until,
        first_paid_order_only=template.audience == CouponTemplate.Audience.NEW_CUSTOMERS,
        campaign_id=template.campaign_id,
        budget_left=None if template.campaign is None else template.campaign.budget_left,
    )
