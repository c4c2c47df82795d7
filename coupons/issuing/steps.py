"""The steps of issuing one coupon, after the claim's Redis screen: read the terms and the
user's claims (from Redis when the screen held them, else from the database), check the reach
and the campaign's budget, refuse early on committed facts, then decide in the decision's
transaction until it settles, telling Redis what the database showed. The service
(coupons/issuing/service.py) is the only caller."""

import time
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError

from core import clock
from coupons.campaign_budget import budget_spent
from coupons.customers import customer_history
from coupons.errors import (
    ClaimBudgetExhausted,
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimPaused,
    ClaimRejected,
    ClaimSoldOut,
    CodeUsed,
    TemplateNotFound,
)
from coupons.issuing.after_decision import record_facts, resync_from_database
from coupons.issuing.claim_sql import (
    ClaimFacts,
    claim_facts,
)
from coupons.issuing.counter_setup import Counter
from coupons.issuing.decision import NO_CONTEXT, DecisionContext, GrantNote, decide
from coupons.issuing.screen_answers import (
    CouponMayHaveRoom,
    CouponRefused,
    CouponTermsMissing,
    ScreenResult,
)
from coupons.issuing.terms_cache import cached_terms, template_from_row
from coupons.models import (
    CouponTemplate,
    UserCoupon,
)
from coupons.rules import ClaimState, claim_state

REJECTION_BY_STATE: dict[ClaimState, type[ClaimRejected]] = {
    ClaimState.NOT_STARTED: ClaimNotInWindow,
    ClaimState.ENDED: ClaimNotInWindow,
    ClaimState.PAUSED: ClaimPaused,
    ClaimState.NOT_ELIGIBLE: ClaimNotEligible,
    ClaimState.SOLD_OUT: ClaimSoldOut,
    ClaimState.LIMIT_REACHED: ClaimLimitReached,
}
# A decision that the facts call claimable but the guarded UPDATE refused can only follow a
# concurrent edit of the template (or the clock passing valid_from); it is retried, this often.
MAX_DECISIONS = 20


@dataclass(frozen=True)
class Reading:
    """What an issue knows before it decides: the template and the user's claims, from the
    screen's row (Redis, no statement) or from the database (`facts`), and, for terms read
    from the database, the lease under which they go back to Redis and when they were read."""

    template: CouponTemplate
    user_claims: int
    facts: ClaimFacts | None  # None: the terms came from Redis
    lease: str | None
    read_at: float | None


def issue_after_screen(
    *,
    template_id: int,
    user_id: int,
    source: str,
    counter: Counter,
    screened: ScreenResult | None,
    before_window_opens: bool = False,
    grant: GrantNote | None = None,
    single_use_code_id: int | None = None,
    context: DecisionContext = NO_CONTEXT,
) -> UserCoupon:
    """`coupon_issue` after the claim's Redis screen (None: none, or Redis unavailable), in its
    steps: read, check the reach and the budget, refuse early on committed facts, decide (with
    what the request's `context` asks of the decision)."""
    if UserCoupon.issued_for_a_reason(source) != (grant is not None):
        raise ValueError("a grant or an event's issue, and only these, carries a GrantNote")
    if single_use_code_id is not None and source != UserCoupon.Source.CODE:
        raise ValueError("a single-use code is redeemed as a code")
    reachable_with_codes = UserCoupon.issued_for_a_reason(source) or single_use_code_id is not None
    reading = _read(template_id=template_id, user_id=user_id, screened=screened)
    _check_reach(reading.template, source=source, reachable_with_codes=reachable_with_codes)
    if budget_spent(reading.template.campaign_id):  # one read, for campaign templates only
        raise ClaimBudgetExhausted()
    if reading.facts is not None:
        # Safe fast rejection without the lock: counts never go down and a paid order stays
        # paid, so a refusal read from a committed snapshot was true when it was read. Redis
        # learns the facts.
        now = clock.now()
        refusal = _refusal(
            reading.facts,
            user_id=user_id,
            user_claims=reading.user_claims,
            before_window_opens=before_window_opens,
            now=now,
        )
        if refusal is not None:
            record_facts(
                counter,
                reading.facts,
                user_id=user_id,
                now=now,
                lease=reading.lease,
                read_at=reading.read_at,
            )
            raise refusal()
    try:
        return _decide_until_settled(
            reading,
            template_id=template_id,
            user_id=user_id,
            counter=counter,
            source=source,
            before_window_opens=before_window_opens,
            grant=grant,
            single_use_code_id=single_use_code_id,
            reachable_with_codes=reachable_with_codes,
            context=context,
        )
    except DatabaseError:
        resync_from_database(counter, template_id=template_id, user_id=user_id)
        raise


def _read(*, template_id: int, user_id: int, screened: ScreenResult | None) -> Reading:
    """The terms come from Redis when it holds them (no statement), else from the database,
    and then go back to Redis under the lease the screen handed out."""
    lease = screened.lease if isinstance(screened, CouponTermsMissing) else None
    if isinstance(screened, CouponMayHaveRoom):
        # A floor: counts only grow, and a slot the user already holds is retried with the next.
        return Reading(
            template=template_from_row(template_id, screened.row),
            user_claims=screened.user_claims or 0,
            facts=None,
            lease=lease,
            read_at=None,
        )
    read_at = time.time()
    facts = claim_facts(template_id=template_id, user_id=user_id)
    return Reading(
        template=facts.template,
        user_claims=facts.user_claims,
        facts=facts,
        lease=lease,
        read_at=read_at,
    )


def _refusal(
    facts: ClaimFacts,
    *,
    user_id: int,
    user_claims: int,
    before_window_opens: bool,
    now: datetime,
) -> type[ClaimRejected] | None:
    """The claim rule on committed facts: None when claimable, else the error of its state."""
    state = claim_state(
        facts.terms,
        now=now,
        user_claims=user_claims,
        has_paid_order=_has_paid_order(facts, user_id=user_id),
        before_window_opens=before_window_opens,
    )
    return None if state is ClaimState.CLAIMABLE else REJECTION_BY_STATE[state]


def _decide_until_settled(
    reading: Reading,
    *,
    template_id: int,
    user_id: int,
    counter: Counter,
    source: str,
    before_window_opens: bool,
    grant: GrantNote | None,
    single_use_code_id: int | None,
    reachable_with_codes: bool,
    context: DecisionContext,
) -> UserCoupon:
    """The decision, retried with the next slot when a concurrent claim of the same user took
    this one; each retry follows a coupon the user really received, so it ends."""
    template, facts, read_at = reading.template, reading.facts, reading.read_at
    slot = reading.user_claims + 1
    for _attempt in range(MAX_DECISIONS):
        outcome = decide(
            template=template,
            user_id=user_id,
            slot=slot,
            before_window_opens=before_window_opens,
            source=source,
            grant=grant,
            single_use_code_id=single_use_code_id,
            context=context,
        )
        if outcome.coupon is not None:
            # What the database now holds: the count the UPDATE left, and at least `slot`
            # coupons of this user (slots below it were taken first). The terms read from the
            # database (if any) go back in the same round trip.
            counter.record(
                template_id=template_id,
                incarnation=template.incarnation,
                user_id=user_id,
                db_claimed=outcome.claimed_count,
                db_user=slot,
                now=clock.now(),
                valid_until=template.valid_until,
                terms=None if facts is None or reading.lease is None else cached_terms(template),
                lease=reading.lease,
                read_at=read_at,
            )
            return outcome.coupon
        # Refused: why, from facts read after the refusal (counts only grow, so a refusal they
        # confirm was true when the UPDATE made it); Redis learns them.
        read_at = time.time()
        facts = claim_facts(template_id=template_id, user_id=user_id)
        template = facts.template
        now = clock.now()
        record_facts(counter, facts, user_id=user_id, now=now, lease=reading.lease, read_at=read_at)
        if outcome.code_used:
            raise CodeUsed()
        _check_reach(template, source=source, reachable_with_codes=reachable_with_codes)
        # At least slot - 1 places are taken when slot is tried: that is how it was chosen.
        user_claims = max(facts.user_claims, slot - 1 + outcome.slot_taken)
        refusal = _refusal(
            facts,
            user_id=user_id,
            user_claims=user_claims,
            before_window_opens=before_window_opens,
            now=now,
        )
        if refusal is not None:
            raise refusal()
        slot = user_claims + 1
    raise DatabaseError(f"claim of template {template_id} did not settle")


def rejection_of(refused: CouponRefused) -> type[ClaimRejected]:
    """The error of a Redis refusal: that of the claim rule's states it stands for (the same
    for each: tests/coupons/test_rules.py)."""
    return REJECTION_BY_STATE[min(refused.answer.states)]


def _check_reach(template: CouponTemplate, *, source: str, reachable_with_codes: bool) -> None:
    """A claim by id reaches public templates only; a template with single-use codes is
    reached only by one of them or by a grant. Otherwise "not found", as if it did not exist.
    (The guarded UPDATE checks the latter again, for terms read from Redis.)"""
    if (
        source == UserCoupon.Source.CLAIM
        and template.visibility != CouponTemplate.Visibility.PUBLIC
    ):
        raise TemplateNotFound()
    if template.has_single_use_codes and not reachable_with_codes:
        raise TemplateNotFound()


def _has_paid_order(facts: ClaimFacts, *, user_id: int) -> bool | None:
    """The audience's fact for this user, looked up only when the template asks for it."""
    if not facts.terms.new_customers_only:
        return None
    return customer_history().has_paid_order(user_id=user_id)
