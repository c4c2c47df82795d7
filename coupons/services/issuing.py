"""Issuing coupons (SPEC sections 4, 14 and 15): the claim's Redis screen, and the one issuing
core every claim, code and grant goes through, deciding in one short transaction
(coupons/services/decision_transaction.py)."""

import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection

from api.throttles import Rate
from core import clock
from coupons.counter_results import (
    CouponLimitReached,
    CouponMayHaveRoom,
    CouponNotInWindow,
    CouponSoldOut,
    CouponTermsMissing,
    CouponThrottled,
    ScreenResult,
)
from coupons.counter_setup import AnyCounter, coupon_counter
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotInWindow,
    ClaimRejected,
    ClaimSoldOut,
    ClaimThrottled,
    TemplateNotFound,
)
from coupons.models import (
    CouponTemplate,
    UserCoupon,
    UseWindow,
)
from coupons.rules import ClaimState, claim_state
from coupons.services.claim_sql import (
    COUNT_THE_CLAIM_SQL,
    END_OF_TIME,
    GRANT_REASON_KEY,
    INSERT_COUPON_SQL,
    CouponInsert,
    claim_facts,
)
from coupons.services.counter_sync import record_facts, resync_from_database
from coupons.services.decision_transaction import decision_transaction, is_slot_taken
from coupons.services.terms_cache import cached_terms, template_from_row


@dataclass(frozen=True)
class IssueOutcome:
    """What one decision transaction did: the coupon it issued, or why it issued none
    (`slot_taken`: a concurrent claim of the same user took the slot first; try the next)."""

    coupon: UserCoupon | None = None
    slot_taken: bool = False
    claimed_count: int | None = None  # with a coupon: the template's count after it


REJECTION_BY_STATE: dict[ClaimState, type[ClaimRejected]] = {
    ClaimState.NOT_STARTED: ClaimNotInWindow,
    ClaimState.ENDED: ClaimNotInWindow,
    ClaimState.SOLD_OUT: ClaimSoldOut,
    ClaimState.LIMIT_REACHED: ClaimLimitReached,
}
REJECTION_BY_REFUSAL: dict[type, type[ClaimRejected]] = {
    CouponNotInWindow: ClaimNotInWindow,
    CouponSoldOut: ClaimSoldOut,
    CouponLimitReached: ClaimLimitReached,
}
# A decision that the facts call claimable but the guarded UPDATE refused can only follow a
# concurrent edit of the template (or the clock passing valid_from); it is retried, this often.
MAX_DECISIONS = 20


def coupon_claim(*, template_id: int, user_id: int) -> UserCoupon:
    """A shopper claims one coupon of a public template by its id (SPEC sections 4 and 15).
    Screened in Redis first, in one round trip: over the claim rate (ClaimThrottled), or
    refused on facts the database confirmed, with no database statement. Otherwise the
    database decides as in `coupon_issue`. A hidden template is "not found", exactly like a
    missing one. Runs its own transactions."""
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
    if isinstance(screened, CouponThrottled):
        raise ClaimThrottled(retry_after=(window + 1) * rate.period - now_seconds)
    if type(screened) in REJECTION_BY_REFUSAL:
        raise REJECTION_BY_REFUSAL[type(screened)]()
    return _issue(
        template_id=template_id,
        user_id=user_id,
        source=UserCoupon.Source.CLAIM,
        counter=counter,
        screened=screened,
    )


def coupon_redeem(*, code: str, user_id: int) -> UserCoupon:
    """A shopper claims the template that has this code, public or hidden, through the same
    issuing core as a claim (SPEC section 11). Codes compare without regard to case; an
    unknown code is TemplateNotFound. Runs its own transactions (see `coupon_issue`)."""
    template_id = (
        CouponTemplate.objects.filter(code_key=code.upper()).values_list("pk", flat=True).first()
    )
    if template_id is None:
        raise TemplateNotFound("No coupon has this code.")
    return coupon_issue(template_id=template_id, user_id=user_id, source=UserCoupon.Source.CODE)


@dataclass(frozen=True)
class GrantNote:
    """Who granted a coupon and why, recorded on it (source `grant`)."""

    granted_by_id: int | None
    reason: str


class AlreadyGranted(Exception):
    """The user already holds a coupon of this template granted for the same reason: a grant
    run again issues nothing twice (the unique (template, user, grant_reason_key) index)."""


def coupon_issue(
    *,
    template_id: int,
    user_id: int,
    source: str,
    before_window_opens: bool = False,
    grant: GrantNote | None = None,
) -> UserCoupon:
    """Issue one coupon of a template to a user, or raise why not. The one issuing core: every
    path that hands out coupons (claim by id, code, grant) comes through here, and the coupon
    records its `source`, its own use window (stamped here, under the row lock) and, for a
    grant, the GrantNote.

    Raises TemplateNotFound (also for a claim by id of a hidden template), AlreadyGranted, or
    a ClaimRejected (ClaimNotInWindow, ClaimSoldOut,
    ClaimLimitReached) decided by `coupons.rules.claim_state` in the order window, total,
    per-user limit; `before_window_opens` skips only the window's start (grants may be made
    early, never after the end). A DatabaseError is re-raised with nothing written, after the
    Redis counters are put back to the database facts.

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
) -> UserCoupon:
    """`coupon_issue`, after the claim's Redis screen (None: none, or Redis unavailable)."""
    if (source == UserCoupon.Source.GRANT) != (grant is not None):
        raise ValueError("a grant, and only a grant, carries a GrantNote")
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
    if (
        source == UserCoupon.Source.CLAIM
        and template.visibility != CouponTemplate.Visibility.PUBLIC
    ):
        raise TemplateNotFound()  # hidden: reachable by code or grant only, never by id
    if facts is not None:
        # Safe fast rejection without the lock: counts never go down, so a refusal read from
        # a committed snapshot was true when it was read. Redis learns the facts.
        now = clock.now()
        state = claim_state(
            facts.terms, now=now, user_claims=user_claims, before_window_opens=before_window_opens
        )
        if state is not ClaimState.CLAIMABLE:
            record_facts(counter, facts, user_id=user_id, now=now, lease=lease, read_at=read_at)
            raise REJECTION_BY_STATE[state]()
    # The decision, retried with the next slot when a concurrent claim of the same user
    # took this one; each retry follows a coupon the user really received, so it ends.
    slot = user_claims + 1
    try:
        for _ in range(MAX_DECISIONS):
            outcome = decide(
                template=template,
                user_id=user_id,
                slot=slot,
                before_window_opens=before_window_opens,
                source=source,
                grant=grant,
            )
            if outcome.coupon is not None:
                # What the database now holds: the count the UPDATE left, and at least
                # `slot` coupons of this user (slots below it were taken first).
                # The terms read from the database (if any) go back in the same round trip.
                counter.record(
                    template_id=template_id,
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
            # At least slot - 1 places are taken when slot is tried: that is how it was chosen.
            user_claims = max(facts.user_claims, slot - 1 + outcome.slot_taken)
            state = claim_state(
                facts.terms,
                now=now,
                user_claims=user_claims,
                before_window_opens=before_window_opens,
            )
            if state is not ClaimState.CLAIMABLE:
                raise REJECTION_BY_STATE[state]()
            slot = user_claims + 1
        raise DatabaseError(f"claim of template {template_id} did not settle")
    except DatabaseError:
        resync_from_database(counter, template_id=template_id, user_id=user_id)
        raise


def decide(
    *,
    template: CouponTemplate,
    user_id: int,
    slot: int,
    before_window_opens: bool,
    source: str,
    grant: GrantNote | None,
) -> IssueOutcome:
    """One decision transaction: the guarded UPDATE takes the row lock, the insert and the
    commit follow. Nothing is written unless both succeed."""
    adapt = connection.ops.adapt_datetimefield_value

    def window_covers(now: datetime) -> list:
        """The parameters of `valid_from <= %s AND valid_until >= %s` for `now`."""
        return [adapt(END_OF_TIME if before_window_opens else now), adapt(now)]

    try:
        with decision_transaction() as decision, connection.cursor() as cursor:
            cursor.execute(COUNT_THE_CLAIM_SQL, [template.pk, slot, *window_covers(clock.now())])
            if cursor.rowcount == 0:
                return IssueOutcome()
            claimed_count = cursor.lastrowid
            # Sampled after the lock: time spent waiting for it counts against the window.
            now = clock.now()
            window = template.use_window_at(now)
            insert = CouponInsert(
                template_id=template.pk,
                user_id=user_id,
                slot=slot,
                coupon_window=window,
                source=source,
                granted_by_id=grant.granted_by_id if grant else None,
                grant_reason=grant.reason if grant else None,
                now=now,
                window_opens_by=END_OF_TIME if before_window_opens else now,
                template_window=UseWindow(template.valid_from, template.valid_until),
                template_valid_days=template.valid_days,
            )
            cursor.execute(INSERT_COUPON_SQL, insert.params(adapt))
            if cursor.rowcount == 0:
                decision.roll_back()
                return IssueOutcome()
            coupon_id = cursor.lastrowid
    except IntegrityError as error:
        if GRANT_REASON_KEY in str(error):
            raise AlreadyGranted() from error
        if not is_slot_taken(error):
            raise
        return IssueOutcome(slot_taken=True)
    coupon = UserCoupon(
        id=coupon_id,
        template=template,
        user_id=user_id,
        slot=slot,
        status=UserCoupon.Status.UNUSED,
        used_at=None,
        valid_from=window.valid_from,
        valid_until=window.valid_until,
        source=source,
        granted_by_id=grant.granted_by_id if grant else None,
        grant_reason=grant.reason if grant else None,
        created_at=now,
        updated_at=now,
    )
    return IssueOutcome(coupon=coupon, claimed_count=claimed_count)
