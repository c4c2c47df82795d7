"""Issuing coupons (SPEC sections 4, 14 and 15): the claim's Redis screen, and the one issuing
core every claim, code and grant goes through, deciding in one short transaction
(coupons/issuing/transaction.py)."""

import time

from django.conf import settings
from django.db import DatabaseError
from django.utils.translation import gettext as _

from api.throttles import Rate
from core import clock
from core.domain_errors import DomainError
from core.metrics import claim_screen_answers_total, claims_total
from coupons.campaigns.budget import budget_spent
from coupons.customers import customer_history
from coupons.errors import (
    ClaimBudgetExhausted,
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimPaused,
    ClaimRejected,
    ClaimSoldOut,
    ClaimThrottled,
    CodeUsed,
    TemplateNotFound,
)
from coupons.issuing.after_decision import record_facts, resync_from_database
from coupons.issuing.claim_sql import (
    ClaimFacts,
    claim_facts,
)
from coupons.issuing.counter_setup import AnyCounter, coupon_counter
from coupons.issuing.decision import GrantNote, decide
from coupons.issuing.screen_answers import (
    CouponMayHaveRoom,
    CouponNotClaimableById,
    CouponRefused,
    CouponTermsMissing,
    CouponThrottled,
    ScreenAnswer,
    ScreenResult,
)
from coupons.issuing.terms_cache import cached_terms, template_from_row
from coupons.models import (
    CouponTemplate,
    UserCoupon,
)
from coupons.rules import ClaimState, claim_state
from coupons.single_use_codes import (
    SingleUseCode,
)

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


def coupon_claim(*, template_id: int, user_id: int) -> UserCoupon:
    """A shopper claims one coupon of a public template by its id (SPEC sections 4 and 15).
    Screened in Redis first, in one round trip: over the claim rate (ClaimThrottled), or
    refused on facts the database confirmed, with no database statement. Otherwise the
    database decides as in `coupon_issue`. A hidden template is "not found", exactly like a
    missing one. Runs its own transactions. Counted for /metrics by outcome."""
    counter = coupon_counter()
    now = clock.now()
    rate = Rate.parse(settings.THROTTLE_RATES["claim"])
    now_seconds = now.timestamp()
    window = int(now_seconds // rate.period)
    screened = counter.screen(
        template_id=template_id,
        user_id=user_id,
        now=now,
        throttle_limit=rate.limit,
        window=window,
        throttle_period=rate.period,
    )
    claim_screen_answers_total.labels(screen_answer_name(screened)).inc()
    decided_by = "redis"
    try:
        if isinstance(screened, CouponThrottled):
            raise ClaimThrottled(retry_after=(window + 1) * rate.period - now_seconds)
        if isinstance(screened, CouponNotClaimableById):
            raise TemplateNotFound()  # a hidden template is not found, even when it has ended
        if isinstance(screened, CouponRefused):
            raise rejection_of(screened)()
        decided_by = "database"
        coupon = _issue(
            template_id=template_id,
            user_id=user_id,
            source=UserCoupon.Source.CLAIM,
            counter=counter,
            screened=screened,
        )
    except DomainError as refusal:
        claims_total.labels(refusal.code, decided_by).inc()
        raise
    claims_total.labels("won", decided_by).inc()
    return coupon


def screen_answer_name(screened: ScreenResult | None) -> str:
    """The screen's answer as /metrics names it (None: Redis was not asked or did not answer)."""
    if isinstance(screened, CouponRefused):
        return screened.answer.name.lower()
    if screened is None:
        return "unavailable"
    return SCREEN_ANSWER_OF[type(screened)].name.lower()


SCREEN_ANSWER_OF: dict[type, ScreenAnswer] = {
    CouponNotClaimableById: ScreenAnswer.NOT_CLAIMABLE_BY_ID,
    CouponThrottled: ScreenAnswer.THROTTLED,
    CouponMayHaveRoom: ScreenAnswer.MAY_HAVE_ROOM,
    CouponTermsMissing: ScreenAnswer.TERMS_MISSING,
}


def coupon_redeem(*, code: str, user_id: int) -> UserCoupon:
    """A shopper claims the template that has this code, public or hidden, through the same
    issuing core as a claim (SPEC section 11). Codes compare without regard to case; an
    unknown code is TemplateNotFound. A single-use code (SPEC section 18) issues its template
    once: to the first redemption that the rule lets through; after it, CodeUsed. Runs its
    own transactions (see `coupon_issue`)."""
    single_use = (
        SingleUseCode.objects.filter(code=code.upper())
        .values_list("pk", "template_id", "used_at")
        .first()
    )
    if single_use is not None:
        code_id, template_id, used_at = single_use
        if used_at is not None:  # safe without a lock: a used code is never freed
            raise CodeUsed()
        return coupon_issue(
            template_id=template_id,
            user_id=user_id,
            source=UserCoupon.Source.CODE,
            single_use_code_id=code_id,
        )
    shared = (
        CouponTemplate.objects.filter(code_key=code.upper()).values_list("pk", flat=True).first()
    )
    if shared is None:
        raise TemplateNotFound(_("No coupon has this code."))
    return coupon_issue(template_id=shared, user_id=user_id, source=UserCoupon.Source.CODE)


def coupon_issue(
    *,
    template_id: int,
    user_id: int,
    source: str,
    before_window_opens: bool = False,
    grant: GrantNote | None = None,
    single_use_code_id: int | None = None,
) -> UserCoupon:
    """Issue one coupon of a template to a user, or raise why not. The one issuing core: every
    path that hands out coupons (claim by id, code, grant) comes through here, and the coupon
    records its `source`, its own use window (stamped here, under the row lock) and, for a
    grant, the GrantNote.

    Raises TemplateNotFound (also for a claim by id of a hidden template, and for a claim by id
    or shared code of a template with single-use codes), AlreadyGranted, CodeUsed (the
    `single_use_code_id` was taken first: it is spent in the decision transaction, at most
    once), or a ClaimRejected (ClaimNotInWindow, ClaimPaused, ClaimNotEligible, ClaimSoldOut,
    ClaimLimitReached) decided by `coupons.rules.claim_state` in the order window, paused,
    audience, total, per-user limit; `before_window_opens` skips only the window's start
    (grants may be made early, never after the end). A DatabaseError is re-raised with
    nothing written, after the Redis counters are put back to the database facts.

    Runs its own short transactions and Redis calls, so call it outside any transaction: inside
    one, the template's row lock would be held until the caller commits. The database decides
    (never over `total`, never over `per_user_limit`, no false sold-out, the window checked
    with `now` sampled after the row lock); Redis only learns what the database showed."""
    return _issue(
        template_id=template_id,
        user_id=user_id,
        source=source,
        before_window_opens=before_window_opens,
        grant=grant,
        single_use_code_id=single_use_code_id,
        counter=coupon_counter(),
        screened=None,
    )


def _issue(
    *,
    template_id: int,
    user_id: int,
    source: str,
    counter: AnyCounter,
    screened: ScreenResult | None,
    before_window_opens: bool = False,
    grant: GrantNote | None = None,
    single_use_code_id: int | None = None,
) -> UserCoupon:
    """`coupon_issue`, after the claim's Redis screen (None: none, or Redis unavailable)."""
    if UserCoupon.issued_for_a_reason(source) != (grant is not None):
        raise ValueError("a grant or an event's issue, and only these, carries a GrantNote")
    if single_use_code_id is not None and source != UserCoupon.Source.CODE:
        raise ValueError("a single-use code is redeemed as a code")
    reachable_with_codes = UserCoupon.issued_for_a_reason(source) or single_use_code_id is not None
    # The terms come from Redis when it holds them (no statement), else from the database,
    # and then go back to Redis under the lease the screen handed out.
    lease = screened.lease if isinstance(screened, CouponTermsMissing) else None
    read_at: float | None = None
    if isinstance(screened, CouponMayHaveRoom):
        template = template_from_row(template_id, screened.row)
        # A floor: counts only grow, and a slot the user already holds is retried with the next.
        user_claims = screened.user_claims or 0
        facts = None
    else:
        read_at = time.time()
        facts = claim_facts(template_id=template_id, user_id=user_id)
        template, user_claims = facts.template, facts.user_claims
    _check_reach(template, source=source, reachable_with_codes=reachable_with_codes)
    if budget_spent(template.campaign_id):  # one read, for campaign templates only
        raise ClaimBudgetExhausted()
    if facts is not None:
        # Safe fast rejection without the lock: counts never go down and a paid order stays
        # paid, so a refusal read from a committed snapshot was true when it was read. Redis
        # learns the facts.
        now = clock.now()
        state = claim_state(
            facts.terms,
            now=now,
            user_claims=user_claims,
            has_paid_order=_has_paid_order(facts, user_id=user_id),
            before_window_opens=before_window_opens,
        )
        if state is not ClaimState.CLAIMABLE:
            record_facts(counter, facts, user_id=user_id, now=now, lease=lease, read_at=read_at)
            raise REJECTION_BY_STATE[state]()
    # The decision, retried with the next slot when a concurrent claim of the same user
    # took this one; each retry follows a coupon the user really received, so it ends.
    slot = user_claims + 1
    try:
        for _attempt in range(MAX_DECISIONS):
            outcome = decide(
                template=template,
                user_id=user_id,
                slot=slot,
                before_window_opens=before_window_opens,
                source=source,
                grant=grant,
                single_use_code_id=single_use_code_id,
            )
            if outcome.coupon is not None:
                # What the database now holds: the count the UPDATE left, and at least
                # `slot` coupons of this user (slots below it were taken first).
                # The terms read from the database (if any) go back in the same round trip.
                counter.record(
                    template_id=template_id,
                    incarnation=template.incarnation,
                    user_id=user_id,
                    db_claimed=outcome.claimed_count,
                    db_user=slot,
                    now=clock.now(),
                    valid_until=template.valid_until,
                    terms=None if facts is None or lease is None else cached_terms(template),
                    lease=lease,
                    read_at=read_at,
                )
                return outcome.coupon
            # Refused: why, from facts read after the refusal (counts only grow, so a
            # refusal they confirm was true when the UPDATE made it); Redis learns them.
            read_at = time.time()
            facts = claim_facts(template_id=template_id, user_id=user_id)
            template = facts.template
            now = clock.now()
            record_facts(counter, facts, user_id=user_id, now=now, lease=lease, read_at=read_at)
            if outcome.code_used:
                raise CodeUsed()
            _check_reach(template, source=source, reachable_with_codes=reachable_with_codes)
            # At least slot - 1 places are taken when slot is tried: that is how it was chosen.
            user_claims = max(facts.user_claims, slot - 1 + outcome.slot_taken)
            state = claim_state(
                facts.terms,
                now=now,
                user_claims=user_claims,
                has_paid_order=_has_paid_order(facts, user_id=user_id),
                before_window_opens=before_window_opens,
            )
            if state is not ClaimState.CLAIMABLE:
                raise REJECTION_BY_STATE[state]()
            slot = user_claims + 1
        raise DatabaseError(f"claim of template {template_id} did not settle")
    except DatabaseError:
        resync_from_database(counter, template_id=template_id, user_id=user_id)
        raise


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
