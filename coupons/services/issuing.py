"""Issuing coupons (SPEC sections 4 and 14): the one issuing core every claim, code and grant
goes through, and its decision transaction."""

from dataclasses import dataclass

from django.db import DatabaseError, IntegrityError, connection, transaction
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY

from core import clock
from coupons.counter import (
    coupon_counter,
)
from coupons.customers import customer_history
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimPaused,
    ClaimRejected,
    ClaimSoldOut,
    CodeUsed,
    TemplateNotFound,
)
from coupons.models import (
    CouponTemplate,
    SingleUseCode,
    UserCoupon,
    UseWindow,
)
from coupons.rules import ClaimState, claim_state
from coupons.services.claim_sql import (
    COUNT_THE_CLAIM_SQL,
    END_OF_TIME,
    GRANT_REASON_KEY,
    INSERT_COUPON_SQL,
    USE_SINGLE_USE_CODE_SQL,
    ClaimCount,
    ClaimFacts,
    CouponInsert,
    claim_facts,
)
from coupons.services.counter_sync import (
    counter_terms,
    log_disagreement,
    resync_from_database,
    sync_after_issue,
    sync_to_facts,
)


@dataclass(frozen=True)
class IssueOutcome:
    """What one decision transaction did: the coupon it issued, or why it issued none
    (`slot_taken`: a concurrent claim of the same user took the slot first; try the next;
    `code_used`: the single-use code was taken by another redemption)."""

    coupon: UserCoupon | None = None
    slot_taken: bool = False
    code_used: bool = False


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
    """A shopper claims one coupon of a public template by its id (SPEC section 4): see
    `coupon_issue`. A hidden template is "not found", exactly like a missing one."""
    return coupon_issue(template_id=template_id, user_id=user_id, source=UserCoupon.Source.CLAIM)


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
    with `now` sampled after the row lock); the Redis counter is only kept in step."""
    if (source == UserCoupon.Source.GRANT) != (grant is not None):
        raise ValueError("a grant, and only a grant, carries a GrantNote")
    if single_use_code_id is not None and source != UserCoupon.Source.CODE:
        raise ValueError("a single-use code is redeemed as a code")
    reachable_with_codes = source == UserCoupon.Source.GRANT or single_use_code_id is not None
    counter = coupon_counter()
    # 1. Committed facts: the counters' rebuild floors and the first slot to try.
    facts = claim_facts(template_id=template_id, user_id=user_id)
    _check_reach(facts, source=source, reachable_with_codes=reachable_with_codes)
    # 2. Safe fast rejection without the lock: counts never go down and a paid order stays
    # paid, so a refusal read from a committed snapshot was true when it was read.
    now = clock.now()
    state = claim_state(
        facts.terms,
        now=now,
        user_claims=facts.user_claims,
        has_paid_order=_has_paid_order(facts, user_id=user_id),
        before_window_opens=before_window_opens,
    )
    if state is not ClaimState.CLAIMABLE:
        sync_to_facts(counter, template_id=template_id, user_id=user_id, facts=facts, now=now)
        raise REJECTION_BY_STATE[state]()
    # 3. The advisory count: recorded, never used to decide. The script knows only the claim
    # window, so an issue allowed before it opens is counted by the sync after it instead.
    counted = None
    if not before_window_opens:
        counted = counter.claim(
            counter_terms(template_id, facts.terms),
            user_id=user_id,
            now=now,
            db_claimed=facts.terms.claimed_count,
            db_user=facts.user_claims,
        )
    # 4. The decision, retried with the next slot when a concurrent claim of the same user
    # took this one; each retry follows a coupon the user really received, so it ends.
    slot = facts.user_claims + 1
    try:
        for _ in range(MAX_DECISIONS):
            outcome = decide(
                template=facts.template,
                user_id=user_id,
                slot=slot,
                before_window_opens=before_window_opens,
                source=source,
                grant=grant,
                single_use_code_id=single_use_code_id,
            )
            if outcome.coupon is not None:
                # 5. Keep Redis in step with what the database now holds.
                sync_after_issue(
                    counter, template_id=template_id, user_id=user_id, terms=facts.terms
                )
                log_disagreement(template_id, counted, ClaimState.CLAIMABLE)
                return outcome.coupon
            # 5. Refused: why, from facts read after the refusal (counts only grow, so a
            # refusal they confirm was true when the UPDATE made it); Redis synced to them.
            facts = claim_facts(template_id=template_id, user_id=user_id)
            now = clock.now()
            sync_to_facts(counter, template_id=template_id, user_id=user_id, facts=facts, now=now)
            if outcome.code_used:
                raise CodeUsed()
            _check_reach(facts, source=source, reachable_with_codes=reachable_with_codes)
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
                log_disagreement(template_id, counted, state)
                raise REJECTION_BY_STATE[state]()
            slot = user_claims + 1
        raise DatabaseError(f"claim of template {template_id} did not settle")
    except DatabaseError:
        resync_from_database(counter, template_id=template_id, user_id=user_id)
        raise


def _check_reach(facts: ClaimFacts, *, source: str, reachable_with_codes: bool) -> None:
    """A claim by id reaches public templates only; a template with single-use codes is
    reached only by one of them or by a grant. Otherwise "not found", as if it did not exist."""
    template = facts.template
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


def decide(
    *,
    template: CouponTemplate,
    user_id: int,
    slot: int,
    before_window_opens: bool,
    source: str,
    grant: GrantNote | None,
    single_use_code_id: int | None = None,
) -> IssueOutcome:
    """One decision transaction: the single-use code taken (if any), the audience looked up
    (if the template asks), then the guarded UPDATE takes the row lock, the insert and the
    commit follow. Nothing is written unless all succeed."""
    adapt = connection.ops.adapt_datetimefield_value
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if single_use_code_id is not None:
                cursor.execute(
                    USE_SINGLE_USE_CODE_SQL,
                    [user_id, adapt(clock.now()), single_use_code_id, template.pk],
                )
                if cursor.rowcount == 0:
                    return IssueOutcome(code_used=True)
            # The audience, read in this transaction: a payment committed before this read
            # refuses the claim; one committed after it finds the claim already decided
            # (docs/decisions/0402-new-customers-and-the-first-payment.md).
            if (
                template.audience == CouponTemplate.Audience.NEW_CUSTOMERS
                and customer_history().has_paid_order(user_id=user_id)
            ):
                transaction.set_rollback(True)
                return IssueOutcome()
            now = clock.now()
            count = ClaimCount(
                template_id=template.pk,
                slot=slot,
                window_opens_by=END_OF_TIME if before_window_opens else now,
                now=now,
                audience=template.audience,
                reachable_with_codes=(
                    source == UserCoupon.Source.GRANT or single_use_code_id is not None
                ),
            )
            cursor.execute(COUNT_THE_CLAIM_SQL, count.params(adapt))
            if cursor.rowcount == 0:
                transaction.set_rollback(True)  # the code, if taken, is free again
                return IssueOutcome()
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
                transaction.set_rollback(True)
                return IssueOutcome()
            coupon_id = cursor.lastrowid
    except IntegrityError as error:
        if GRANT_REASON_KEY in str(error):
            raise AlreadyGranted() from error
        if not _is_slot_taken(error):
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
    return IssueOutcome(coupon=coupon)


def _is_slot_taken(error: IntegrityError) -> bool:
    """The duplicate-key error of the (template, user, slot) index, on MySQL or SQLite."""
    if connection.vendor == "mysql":
        return error.args[0] == ER_DUP_ENTRY
    return "UNIQUE constraint failed" in str(error)
