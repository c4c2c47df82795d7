"""Grants (SPEC section 11): staff issue a template to chosen users in batches, each user judged
by the claim's rule (coupons.rules.claim_state) under the template's row lock; not through the
one-coupon issuing core (coupons.issuing.coupon_issue), which a batch would call per user."""

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, F
from django.utils.translation import gettext as _

from core import clock
from core.staff_audit import NOT_STAFF, StaffAudit
from coupons.campaign_budget import budget_spent
from coupons.customers import customer_history
from coupons.errors import (
    ClaimBudgetExhausted,
    ClaimNotInWindow,
    ClaimPaused,
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.grant_reasons import (
    EVENT_REASON_PREFIX,
    GRANT_REASON_MAX_LENGTH,
    reason_kept_for_events,
    reason_key,
)
from coupons.issuing import GrantNote
from coupons.models import CouponTemplate, UserCoupon
from coupons.rules import ClaimState, claim_state
from coupons.terms import template_facts

MAX_GRANT_USERS = 1000
# A grant to the users of a file (a staff job, backoffice/staff_jobs/).
MAX_FILE_GRANT_USERS = 100_000


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

    def counts(self) -> dict[str, int]:
        return {outcome: len(ids) for outcome, ids in vars(self).items() if ids}


@dataclass(frozen=True)
class GrantResumed:
    """Where a grant stopped midway by its process goes on: the first `decided` users (of the
    same list) were decided by the earlier run, with these counts per outcome."""

    decided: int = 0
    outcomes: Mapping[str, int] = field(default_factory=dict)


def coupon_grant(
    *,
    template_id: int,
    user_ids: Sequence[int],
    reason: str,
    granted_by_id: int | None,
    on_batch: Callable[[int, GrantResult], None] | None = None,
    audit: StaffAudit = NOT_STAFF,
    max_users: int = MAX_GRANT_USERS,
    resumed: GrantResumed = GrantResumed(),
    unknown_names: int = 0,
) -> GrantResult:
    """Staff issue a template to chosen users (at most `max_users`: the API's and the admin's
    bound; the command passes its whole file), allowed before the claim window opens but
    not once the template has ended, nor while it is paused (ClaimPaused; a pause during the
    run stops the rest, reported under `paused`). Idempotent per (template, user, reason).

    Decided in batches of GRANT_BATCH_SIZE users, each one transaction under the template's
    row lock (the claim's decision waits for it, so totals and per-user limits hold exactly
    as for claims): the claim rule per user (coupons.rules.claim_state), the coupons inserted
    together, the count raised once, and the run's one audit entry written or brought up to
    date, so a run stopped midway leaves every batch's coupons with their entry. Runs its own
    transactions; `on_batch(done, batch)` is called inside each batch's, with the users decided
    so far and the batch's own outcomes, so a job's progress commits with what it counts; a
    run `resumed` skips the users an earlier one decided and records the counts of both;
    `unknown_names` the door could not resolve to users are recorded as unknown users too.
    The door's `audit` asks
    coupons.grant_coupons; the run is recorded with its reason and counts per outcome. Redis
    learns the higher count at the next decision (its counts may only lag below the
    database's, which never refuses wrongly)."""
    audit.check()
    reason = reason.strip() if isinstance(reason, str) else ""
    errors: dict[str, list[str]] = {}
    if not 1 <= len(reason) <= GRANT_REASON_MAX_LENGTH:
        errors["reason"] = [
            _("1 to %(count)d characters are required.") % {"count": GRANT_REASON_MAX_LENGTH}
        ]
    elif reason_kept_for_events(reason):
        errors["reason"] = [
            _("A reason may not begin with “%(prefix)s”: it names coupons issued by events.")
            % {"prefix": EVENT_REASON_PREFIX}
        ]
    if not 1 <= len(user_ids) <= max_users:
        errors["user_ids"] = [
            _("Between 1 and %(count)d user ids are required.") % {"count": max_users}
        ]
    if errors:
        raise TemplateInvalid(_("Invalid grant."), fields=errors)
    template = (
        CouponTemplate.objects.filter(pk=template_id)
        .only("valid_until", "paused_at", "campaign_id")
        .first()
    )
    if template is None:
        raise TemplateNotFound()
    if clock.now() > template.valid_until:
        raise ClaimNotInWindow(_("This coupon has ended; it can no longer be granted."))
    if template.paused_at is not None:
        raise ClaimPaused(_("This coupon is paused; resume it to grant it."))
    if budget_spent(template.campaign_id):
        raise ClaimBudgetExhausted()

    wanted = list(dict.fromkeys(user_ids))  # repeats dropped, order kept
    note = GrantNote(granted_by_id=granted_by_id, reason=reason)
    result = _no_users()
    stopped: ClaimState | None = None
    for start in range(resumed.decided, len(wanted), GRANT_BATCH_SIZE):
        users = wanted[start : start + GRANT_BATCH_SIZE]
        batch = _no_users()
        with transaction.atomic():
            if stopped is None:
                stopped = _grant_batch(template_id, users, note, result=batch)
            else:  # paused or ended in an earlier batch: nobody after it is granted
                _outcome_list(batch, stopped).extend(users)
            for outcome, ids in vars(batch).items():
                getattr(result, outcome).extend(ids)
            outcomes = Counter(resumed.outcomes) + Counter(result.counts())
            outcomes["unknown_user"] += unknown_names
            outcomes = +outcomes  # zero counts dropped
            amounts = {"users": len(wanted), "reason": reason, "outcomes": dict(outcomes)}
            audit.record(template, amounts)  # the run's one entry, brought up to date
            if on_batch is not None:
                on_batch(start + len(users), batch)
    return result


def _no_users() -> GrantResult:
    return GrantResult([], [], [], [], [], [], [], [])


# Users decided per transaction: large enough that a 100,000-user grant is a hundred short
# transactions, small enough that the template's row lock is held for tens of milliseconds.
GRANT_BATCH_SIZE = 1000

STATE_OUTCOMES = {
    ClaimState.ENDED: "ended",
    ClaimState.PAUSED: "paused",
    ClaimState.NOT_ELIGIBLE: "not_eligible",
    ClaimState.SOLD_OUT: "sold_out",
    ClaimState.LIMIT_REACHED: "limit_reached",
}


def _outcome_list(result: GrantResult, state: ClaimState) -> list[int]:
    return getattr(result, STATE_OUTCOMES[state])


def _grant_batch(
    template_id: int, user_ids: list[int], note: GrantNote, *, result: GrantResult
) -> ClaimState | None:
    """One batch, inside its transaction: the template's row locked first, then the users'
    facts read under it, the claim rule per user in the order given, the coupons inserted.
    Returns the state that stops the run (paused or ended), else None."""
    template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
    if template is None:
        raise TemplateNotFound()
    now = clock.now()  # after the lock: a wait for it counts against the window
    known = set(
        get_user_model()
        .objects.filter(pk__in=user_ids, is_active=True)  # inactive: reported as unknown
        .values_list("pk", flat=True)
    )
    coupons = UserCoupon.objects.filter(template_id=template_id, user_id__in=user_ids)
    key = reason_key(note.reason)  # the same reason however spelt (coupons/grant_reasons.py)
    held = set(coupons.filter(grant_reason_key=key).values_list("user_id", flat=True))
    user_claims = dict(coupons.order_by().values_list("user_id").annotate(count=Count("pk")))
    new_customers_only = template.audience == CouponTemplate.Audience.NEW_CUSTOMERS
    paid = customer_history().paid_among(user_ids=list(known)) if new_customers_only else set()
    facts = template_facts(template)
    window = template.use_window_at(now)
    issued: list[UserCoupon] = []
    for position, user_id in enumerate(user_ids):
        if user_id not in known:
            result.unknown_user.append(user_id)
            continue
        if user_id in held:
            result.already_granted.append(user_id)
            continue
        state = claim_state(
            replace(facts, claimed_count=template.claimed_count + len(issued)),
            now=now,
            user_claims=user_claims.get(user_id, 0),
            has_paid_order=user_id in paid if new_customers_only else None,
            before_window_opens=True,
        )
        if state in (ClaimState.PAUSED, ClaimState.ENDED):
            _outcome_list(result, state).extend(user_ids[position:])
            _issue_together(template, issued)
            return state
        if state is not ClaimState.CLAIMABLE:
            _outcome_list(result, state).append(user_id)
            continue
        issued.append(
            UserCoupon(
                template_id=template_id,
                user_id=user_id,
                slot=user_claims.get(user_id, 0) + 1,
                status=UserCoupon.Status.UNUSED,
                valid_from=window.valid_from,
                valid_until=window.valid_until,
                source=UserCoupon.Source.GRANT,
                granted_by_id=note.granted_by_id,
                grant_reason=note.reason,
                grant_reason_key=key,
                created_at=now,
                updated_at=now,
            )
        )
        result.granted.append(user_id)
    _issue_together(template, issued)
    return None


def _issue_together(template: CouponTemplate, issued: list[UserCoupon]) -> None:
    """Insert a batch's coupons and raise the template's count by as many, under its lock."""
    if not issued:
        return
    UserCoupon.objects.bulk_create(issued)
    CouponTemplate.objects.filter(pk=template.pk).update(
        claimed_count=F("claimed_count") + len(issued)
    )
