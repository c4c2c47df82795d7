"""The issuing core's decision (coupons/issuing/service.py): one short transaction that spends
a single-use code (if any), reads the audience (if the template asks), counts the claim with
the guarded UPDATE and inserts the coupon, or writes nothing."""

from dataclasses import dataclass, replace

from django.db import IntegrityError, OperationalError, connection

from accounts.authentication import (
    USER_NOT_FOUND,
    TokenCheck,
    token_check_in_database,
    token_refused,
)
from api.errors import RequestInProgress
from api.idempotency import EffectRecord, effect_record_write
from core import clock
from coupons.customers import customer_history
from coupons.issuing.claim_sql import (
    END_OF_TIME,
    GRANT_REASON_KEY,
    INSERT_COUPON_SQL,
    USE_SINGLE_USE_CODE_SQL,
    ClaimCount,
    CouponInsert,
    count_the_claim,
)
from coupons.issuing.procedure import RECORD_GONE, REFUSAL_OF_ERRNO, decide_in_one_call
from coupons.issuing.transaction import decision_transaction, is_slot_taken, is_user_gone
from coupons.models import CouponTemplate, UserCoupon, UseWindow


@dataclass(frozen=True)
class IssueOutcome:
    """What one decision transaction did: the coupon it issued, or why it issued none
    (`slot_taken`: a concurrent claim of the same user took the slot first; try the next;
    `code_used`: the single-use code was taken by another redemption)."""

    coupon: UserCoupon | None = None
    slot_taken: bool = False
    code_used: bool = False
    claimed_count: int | None = None  # with a coupon: the template's count after it


@dataclass(frozen=True)
class DecisionContext:
    """What the request asks of the decision's transaction besides the coupon: the check of a
    user Redis did not hold, made by the same call (decision 1016), and the Idempotency-Key
    record the coupon's id commits with (decision 1000). Passed down from the door."""

    token_check: TokenCheck | None = None
    effect_record: EffectRecord | None = None


NO_CONTEXT = DecisionContext()


@dataclass(frozen=True)
class GrantNote:
    """Who granted a coupon and why, recorded on it (source `grant`)."""

    granted_by_id: int | None
    reason: str


class AlreadyGranted(Exception):
    """The user already holds a coupon of this template granted for the same reason: a grant
    run again issues nothing twice (the unique (template, user, grant_reason_key) index)."""


def coupon_insert(
    template: CouponTemplate,
    count: ClaimCount,
    *,
    user_id: int,
    grant: GrantNote | None,
    source: str,
) -> CouponInsert:
    """The coupon's row as issued at `count.now`, checked against the terms the decision read."""
    return CouponInsert(
        template_id=template.pk,
        user_id=user_id,
        slot=count.slot,
        coupon_window=template.use_window_at(count.now),
        source=source,
        granted_by_id=grant.granted_by_id if grant else None,
        grant_reason=grant.reason if grant else None,
        now=count.now,
        window_opens_by=count.window_opens_by,
        template_window=UseWindow(template.valid_from, template.valid_until),
        template_valid_days=template.valid_days,
    )


def decide(
    *,
    template: CouponTemplate,
    user_id: int,
    slot: int,
    before_window_opens: bool,
    source: str,
    grant: GrantNote | None,
    single_use_code_id: int | None = None,
    context: DecisionContext = NO_CONTEXT,
) -> IssueOutcome:
    """One decision transaction: the single-use code taken (if any), the audience looked up
    (if the template asks), then the guarded UPDATE takes the row lock, the insert and the
    commit follow (on MySQL in one call, so no Python runs while the lock is held), with what
    the `context` asks. Nothing is written unless all succeed."""
    adapt = connection.ops.adapt_datetimefield_value
    token_check = context.token_check
    effect_record = context.effect_record
    try:
        with decision_transaction() as decision, decision.connection.cursor() as cursor:
            if token_check is not None and not decision.ends_in_server:
                token_check_in_database(token_check)
            if single_use_code_id is not None:
                cursor.execute(
                    USE_SINGLE_USE_CODE_SQL,
                    [user_id, adapt(clock.now()), single_use_code_id, template.pk],
                )
                if cursor.rowcount == 0:
                    decision.roll_back()
                    return IssueOutcome(code_used=True)
            # The audience, read in this transaction: a payment committed before this read
            # refuses the claim; one committed after it finds the claim already decided
            # (docs/decisions/0402-new-customers-and-the-first-payment.md).
            if template.audience == CouponTemplate.Audience.NEW_CUSTOMERS and (
                customer_history().has_paid_order(user_id=user_id, using=decision.connection.alias)
            ):
                decision.roll_back()
                return IssueOutcome()
            now = clock.now()
            count = ClaimCount(
                template_id=template.pk,
                slot=slot,
                window_opens_by=END_OF_TIME if before_window_opens else now,
                now=now,
                audience=template.audience,
                reachable_with_codes=(
                    UserCoupon.issued_for_a_reason(source) or single_use_code_id is not None
                ),
                reachable_hidden=source != UserCoupon.Source.CLAIM,
            )
            if decision.ends_in_server:
                # MySQL: the UPDATE, the INSERT and the COMMIT in one call; the server
                # measures the wait for the lock, which counts against the window.
                decided = decide_in_one_call(
                    cursor,
                    count,
                    coupon_insert(template, count, user_id=user_id, grant=grant, source=source),
                    adapt,
                    idempotency_record_id=None
                    if effect_record is None
                    else effect_record.record_id,
                    token_check=token_check,
                )
                decision.ended_in_server()
                if decided.coupon_id is None:
                    return IssueOutcome()
                claimed_count, coupon_id = decided.claimed_count, decided.coupon_id
                # What the DATETIME(3) columns kept: the answer (and its replay) says the same.
                now = clock.truncate_to_milliseconds(now + decided.waited)
            else:
                claimed_count = count_the_claim(
                    cursor, vendor=decision.connection.vendor, params=count.params(adapt)
                )
                if claimed_count is None:
                    decision.roll_back()  # the code, if taken, is free again
                    return IssueOutcome()
                # Sampled after the lock: time spent waiting for it counts against the window.
                now = clock.now()
                count = replace(
                    count, now=now, window_opens_by=END_OF_TIME if before_window_opens else now
                )
                insert = coupon_insert(template, count, user_id=user_id, grant=grant, source=source)
                cursor.execute(INSERT_COUPON_SQL, insert.params(adapt))
                if cursor.rowcount == 0:
                    decision.roll_back()
                    return IssueOutcome()
                coupon_id = cursor.lastrowid
                effect_record_write(
                    effect_record, effect_id=coupon_id, using=decision.connection.alias
                )
            window = template.use_window_at(now)
    except IntegrityError as error:
        if GRANT_REASON_KEY in str(error):
            raise AlreadyGranted() from error
        if grant is None and is_user_gone(error):  # a claim's user deleted after its facts
            token_refused(USER_NOT_FOUND)
        if not is_slot_taken(error):
            raise
        return IssueOutcome(slot_taken=True)
    except OperationalError as error:
        refusal = REFUSAL_OF_ERRNO.get(error.args[0]) if error.args else None
        if refusal == RECORD_GONE:  # a retry took the key; nothing written
            raise RequestInProgress() from error
        if refusal is not None:  # the procedure read the user for the token: nothing written
            token_refused(refusal)
        raise
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
