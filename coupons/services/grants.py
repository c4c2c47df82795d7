"""Grants (SPEC section 11): staff issue a template to chosen users through the issuing core."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils.translation import gettext as _

from accounts.staff_actions import Actor, StaffAction, staff_action_check, staff_action_record
from core import clock
from coupons.decision import AlreadyGranted, GrantNote
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimPaused,
    ClaimSoldOut,
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.grant_reasons import reason_key
from coupons.models import (
    GRANT_REASON_MAX_LENGTH,
    CouponTemplate,
    UserCoupon,
)
from coupons.services.issuing import coupon_issue

MAX_GRANT_USERS = 1000


@dataclass(frozen=True)
class GrantResult:
    """The requested users sorted by outcome, each list in the order given. Beyond the
    SPEC's four lists: `already_granted` (this template was granted to them for this reason
    before, so a re-run issues nothing twice), `ended` (the template ended mid-batch),
    `paused` (it was paused mid-batch) and `not_eligible` (a new-customers template, and
    they have paid for an order: SPEC section 18)."""

    granted: list[int]
    limit_reached: list[int]
    sold_out: list[int]
    unknown_user: list[int]
    already_granted: list[int]
    ended: list[int]
    paused: list[int]
    not_eligible: list[int]


def coupon_grant(
    *,
    template_id: int,
    user_ids: Sequence[int],
    reason: str,
    granted_by_id: int | None,
    on_progress: Callable[[int], None] | None = None,
    actor: Actor | None = None,
) -> GrantResult:
    """Staff issue a template to chosen users, one issue per user through `coupon_issue` (the
    claim's locking, total and per-user limit), allowed before the claim window opens but not
    once the template has ended, nor while it is paused (ClaimPaused; a pause during the run
    stops the rest, reported under `paused`). Idempotent per (template, user, reason). Runs
    its own transactions; `on_progress(done)` is called after each user. `actor` must hold
    coupons.grant_coupons; the run is recorded with its reason and counts per outcome."""
    staff_action_check(actor=actor, action=StaffAction.COUPONS_GRANT)
    reason = reason.strip() if isinstance(reason, str) else ""
    errors: dict[str, list[str]] = {}
    if not 1 <= len(reason) <= GRANT_REASON_MAX_LENGTH:
        errors["reason"] = [
            _("1 to %(count)d characters are required.") % {"count": GRANT_REASON_MAX_LENGTH}
        ]
    if not 1 <= len(user_ids) <= MAX_GRANT_USERS:
        errors["user_ids"] = [
            _("Between 1 and %(count)d user ids are required.") % {"count": MAX_GRANT_USERS}
        ]
    if errors:
        raise TemplateInvalid(_("Invalid grant."), fields=errors)
    template = (
        CouponTemplate.objects.filter(pk=template_id).only("valid_until", "paused_at").first()
    )
    if template is None:
        raise TemplateNotFound()
    if clock.now() > template.valid_until:
        raise ClaimNotInWindow(_("This coupon has ended; it can no longer be granted."))
    if template.paused_at is not None:
        raise ClaimPaused(_("This coupon is paused; resume it to grant it."))

    wanted = list(dict.fromkeys(user_ids))  # repeats dropped, order kept
    # Inactive users are not granted to, and are reported like ids that do not exist.
    known = set(
        get_user_model().objects.filter(pk__in=wanted, is_active=True).values_list("pk", flat=True)
    )
    # The same reason however spelt (case, width, spaces: coupons/grant_reasons.py).
    held = set(
        UserCoupon.objects.filter(
            template_id=template_id, grant_reason_key=reason_key(reason), user_id__in=wanted
        ).values_list("user_id", flat=True)
    )
    note = GrantNote(granted_by_id=granted_by_id, reason=reason)
    result = GrantResult([], [], [], [], [], [], [], [])
    for done, user_id in enumerate(wanted, start=1):
        _grant_one(template_id, user_id, note, known=known, held=held, result=result)
        if on_progress is not None:
            on_progress(done)
    staff_action_record(
        actor=actor,
        action=StaffAction.COUPONS_GRANT,
        target=template,
        amounts={
            "users": len(wanted),
            "reason": reason,
            "outcomes": {outcome: len(ids) for outcome, ids in vars(result).items() if ids},
        },
    )
    return result


def _grant_one(
    template_id: int,
    user_id: int,
    note: GrantNote,
    *,
    known: set[int],
    held: set[int],
    result: GrantResult,
) -> None:
    if user_id not in known:
        result.unknown_user.append(user_id)
        return
    if user_id in held:
        result.already_granted.append(user_id)
        return
    try:
        coupon_issue(
            template_id=template_id,
            user_id=user_id,
            source=UserCoupon.Source.GRANT,
            before_window_opens=True,
            grant=note,
        )
    except AlreadyGranted:  # a concurrent run of the same grant got there first
        result.already_granted.append(user_id)
    except ClaimSoldOut:
        result.sold_out.append(user_id)
    except ClaimLimitReached:
        result.limit_reached.append(user_id)
    except ClaimNotInWindow:
        result.ended.append(user_id)
    except ClaimPaused:
        result.paused.append(user_id)
    except ClaimNotEligible:
        result.not_eligible.append(user_id)
    else:
        result.granted.append(user_id)
