"""Every write to coupons. Transactions live here; views and the admin only call these."""

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, IntegrityError, connection, models, transaction
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY

from core import clock
from coupons.catalog import scope_catalog
from coupons.counter import (
    STATES_BY_RESULT,
    AnyCounter,
    ClaimTerms,
    CounterResult,
    coupon_counter,
)
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotInWindow,
    ClaimRejected,
    ClaimSoldOut,
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.models import (
    CODE_PATTERN,
    GRANT_REASON_MAX_LENGTH,
    MAX_AMOUNT,
    MAX_COUNT,
    MAX_PERCENT,
    MAX_SCOPE_IDS,
    MAX_VALID_DAYS,
    NAME_MAX_LENGTH,
    CouponTemplate,
    UserCoupon,
)
from coupons.rules import ClaimState, TemplateFacts, claim_state

logger = logging.getLogger(__name__)

TEMPLATE_TERMS = (
    "name",
    "type",
    "value",
    "min_amount",
    "total",
    "per_user_limit",
    "valid_from",
    "valid_until",
    "max_discount",
    "valid_days",
    "scope",
    "scope_ids",
    "code",
    "visibility",
)
# Coupons already in users' hands would silently change value if these changed. The claim
# window is not here: each coupon carries its own use window, stamped at issue.
FROZEN_ONCE_CLAIMED = (
    "type",
    "value",
    "min_amount",
    "max_discount",
    "valid_days",
    "scope",
    "scope_ids",
)


def template_terms_validate(
    terms: dict[str, Any], *, current: CouponTemplate | None = None
) -> dict[str, Any]:
    """Check a template's full terms (and, for an edit, the freeze rules against `current`);
    return them cleaned or raise TemplateInvalid naming every bad field. The one place that
    holds the template rules: the API and the Django admin both come through here."""
    clean = dict(terms)
    errors: dict[str, list[str]] = {}

    def fail(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    def check_int(field: str, low: int, high: int) -> None:
        value = clean.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            fail(field, "A whole number is required.")
        elif not low <= value <= high:
            fail(field, f"Must be between {low} and {high}.")

    name = clean.get("name")
    if not isinstance(name, str):
        fail("name", "A string is required.")
    else:
        clean["name"] = name.strip()
        if not 1 <= len(clean["name"]) <= NAME_MAX_LENGTH:
            fail("name", f"Must be 1 to {NAME_MAX_LENGTH} characters after trimming.")

    if clean.get("type") not in CouponTemplate.Type.values:
        fail("type", f"Must be one of: {', '.join(CouponTemplate.Type.values)}.")
    if clean.get("type") == CouponTemplate.Type.PERCENT:
        check_int("value", 1, MAX_PERCENT)  # the percent off
    else:
        check_int("value", 1, MAX_AMOUNT)
    check_int("min_amount", 0, MAX_AMOUNT)
    check_int("total", 1, MAX_COUNT)
    check_int("per_user_limit", 1, MAX_COUNT)
    if clean.get("max_discount") is not None:
        check_int("max_discount", 1, MAX_AMOUNT)
        if clean.get("type") != CouponTemplate.Type.PERCENT:
            fail("max_discount", "Only a percent coupon may have a cap; leave it empty.")
    if clean.get("valid_days") is not None:
        check_int("valid_days", 1, MAX_VALID_DAYS)
    _scope_validate(clean, fail, current=current)
    _code_validate(clean, fail, current=current)
    if clean.get("visibility") not in CouponTemplate.Visibility.values:
        fail("visibility", f"Must be one of: {', '.join(CouponTemplate.Visibility.values)}.")
    if "value" not in errors and "min_amount" not in errors:
        if clean.get("type") == CouponTemplate.Type.DIRECT and clean["min_amount"] != 0:
            fail("min_amount", "Must be 0 for a direct coupon.")
        if (
            clean.get("type") == CouponTemplate.Type.THRESHOLD
            and clean["min_amount"] < clean["value"]
        ):
            fail("min_amount", "Must be at least the value for a threshold coupon.")

    for field in ("valid_from", "valid_until"):
        moment = clean.get(field)
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            fail(field, "A date-time with a UTC offset is required.")
        else:  # compared at the precision the database keeps
            clean[field] = clock.truncate_to_milliseconds(moment)
    if "valid_from" not in errors and "valid_until" not in errors:
        if clean["valid_from"] >= clean["valid_until"]:
            fail("valid_until", "Must be after valid_from.")

    if current is not None and current.claimed_count > 0:
        for field in FROZEN_ONCE_CLAIMED:  # scope_ids: both sorted, so compared as sets
            if field not in errors and clean.get(field) != getattr(current, field):
                fail(field, "Cannot change once the coupon has been claimed.")
        if "total" not in errors and clean["total"] < current.claimed_count:
            fail("total", f"Cannot be below the {current.claimed_count} already claimed.")

    if errors:
        raise TemplateInvalid(fields=errors)
    return {field: clean[field] for field in TEMPLATE_TERMS}


def _scope_validate(
    clean: dict[str, Any], fail: Callable[[str, str], None], *, current: CouponTemplate | None
) -> None:
    """scope is all (no ids) or categories / products with 1..500 positive ids, which the
    injected catalog knows. The ids are stored sorted and without repeats. Only ids new to the
    template are looked up: one whose product was removed since must not block other edits."""
    scope, ids = clean.get("scope"), clean.get("scope_ids")
    if scope not in CouponTemplate.Scope.values:
        fail("scope", f"Must be one of: {', '.join(CouponTemplate.Scope.values)}.")
        return
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_AMOUNT for i in ids
    ):
        fail("scope_ids", "A list of ids (positive whole numbers) is required.")
        return
    if scope == CouponTemplate.Scope.ALL:
        if ids:
            fail("scope_ids", 'Must be empty when scope is "all".')
        return
    clean["scope_ids"] = ids = sorted(set(ids))
    if not 1 <= len(ids) <= MAX_SCOPE_IDS:
        fail("scope_ids", f"Between 1 and {MAX_SCOPE_IDS} ids are required for scope {scope}.")
        return
    catalog = scope_catalog()
    if catalog is not None:
        kept = set(current.scope_ids) if current is not None and current.scope == scope else set()
        new_ids = sorted(set(ids) - kept)
        unknown = sorted(set(new_ids) - set(catalog.names(scope=scope, ids=new_ids)))
        if unknown:
            fail("scope_ids", f"Unknown {scope}: {', '.join(map(str, unknown[:20]))}.")


def _code_validate(
    clean: dict[str, Any], fail: Callable[[str, str], None], *, current: CouponTemplate | None
) -> None:
    """A code is 4..32 of A-Z a-z 0-9 _ -, unique without regard to case. The unique index on
    code_key (the upper-cased code) holds this against races; this check names the field."""
    code = clean.get("code")
    if code is None:
        return
    if not isinstance(code, str) or not re.fullmatch(CODE_PATTERN, code):
        fail("code", "Must be 4 to 32 characters of A-Z, a-z, 0-9, _ and -.")
        return
    taken = CouponTemplate.objects.filter(code_key=code.upper())
    if current is not None:
        taken = taken.exclude(pk=current.pk)
    if taken.exists():
        fail("code", "Another coupon already has this code (codes ignore case).")


def coupon_template_publish(
    *,
    name: str,
    type: str,
    value: int,
    total: int,
    valid_from: datetime,
    valid_until: datetime,
    min_amount: int = 0,
    per_user_limit: int = 1,
    max_discount: int | None = None,
    valid_days: int | None = None,
    scope: str = CouponTemplate.Scope.ALL,
    scope_ids: list[int] | None = None,
    code: str | None = None,
    visibility: str = CouponTemplate.Visibility.PUBLIC,
) -> CouponTemplate:
    """Create a template after validating its terms. Runs in its own transaction."""
    terms = template_terms_validate(
        {
            "name": name,
            "type": type,
            "value": value,
            "min_amount": min_amount,
            "total": total,
            "per_user_limit": per_user_limit,
            "valid_from": valid_from,
            "valid_until": valid_until,
            "max_discount": max_discount,
            "valid_days": valid_days,
            "scope": scope,
            "scope_ids": [] if scope_ids is None else scope_ids,
            "code": code,
            "visibility": visibility,
        }
    )
    with _code_taken_is_invalid():
        return CouponTemplate.objects.create(**terms)


def coupon_template_edit(*, template_id: int, changes: dict[str, Any]) -> CouponTemplate:
    """Apply `changes` to a template under its row lock, so the freeze rules see the
    claimed_count a concurrent claim may just have raised. Runs in its own transaction."""
    unknown = set(changes) - set(TEMPLATE_TERMS)
    if unknown:
        raise TemplateInvalid(fields={field: ["Unknown field."] for field in sorted(unknown)})
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        merged = {field: getattr(template, field) for field in TEMPLATE_TERMS} | changes
        terms = template_terms_validate(merged, current=template)
        for field, value in terms.items():
            setattr(template, field, value)
        with _code_taken_is_invalid():
            template.save(update_fields=[*TEMPLATE_TERMS, "updated_at"])
    return template


@contextmanager
def _code_taken_is_invalid() -> Iterator[None]:
    """Two templates racing for one code: the unique index refuses the second, which is then
    the same 400 as the check in _code_validate would have given."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        if "coupon_template_code_unique" not in str(error):
            raise
        raise TemplateInvalid(
            fields={"code": ["Another coupon already has this code (codes ignore case)."]}
        ) from error


def coupon_template_delete(*, template_id: int) -> None:
    """Delete a template that nobody has claimed. Under the row lock a claim cannot slip in
    between the check and the delete. Runs in its own transaction."""
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        if template.claimed_count > 0:
            raise TemplateInvalid("A template with claims cannot be deleted.")
        template.delete()


# --- Issuing coupons (SPEC sections 4 and 14) -------------------------------------------------


@dataclass(frozen=True)
class ClaimFacts:
    """A template and one user's coupons of it, read from committed data in one query."""

    template: CouponTemplate  # the row as read, for the response's template summary
    terms: TemplateFacts
    user_claims: int


@dataclass(frozen=True)
class IssueOutcome:
    """What one decision transaction did: the coupon it issued, or why it issued none
    (`slot_taken`: a concurrent claim of the same user took the slot first; try the next)."""

    coupon: UserCoupon | None = None
    slot_taken: bool = False


REJECTION_BY_STATE: dict[ClaimState, type[ClaimRejected]] = {
    ClaimState.NOT_STARTED: ClaimNotInWindow,
    ClaimState.ENDED: ClaimNotInWindow,
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
    run again issues nothing twice (the unique (template, user, grant_reason) index)."""


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
    with `now` sampled after the row lock); the Redis counter is only kept in step."""
    if (source == UserCoupon.Source.GRANT) != (grant is not None):
        raise ValueError("a grant, and only a grant, carries a GrantNote")
    counter = coupon_counter()
    # 1. Committed facts: the counters' rebuild floors and the first slot to try.
    facts = _claim_facts(template_id=template_id, user_id=user_id)
    if (
        source == UserCoupon.Source.CLAIM
        and facts.template.visibility != CouponTemplate.Visibility.PUBLIC
    ):
        raise TemplateNotFound()  # hidden: reachable by code or grant only, never by id
    # 2. Safe fast rejection without the lock: counts never go down, so a refusal read from a
    # committed snapshot was true when it was read.
    now = clock.now()
    state = claim_state(
        facts.terms, now=now, user_claims=facts.user_claims, before_window_opens=before_window_opens
    )
    if state is not ClaimState.CLAIMABLE:
        _sync(counter, template_id=template_id, user_id=user_id, facts=facts, now=now)
        raise REJECTION_BY_STATE[state]()
    # 3. The advisory count: recorded, never used to decide. The script knows only the claim
    # window, so an issue allowed before it opens is counted by the sync after it instead.
    counted = None
    if not before_window_opens:
        counted = counter.claim(
            _claim_terms(template_id, facts.terms),
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
            outcome = _decide(
                template=facts.template,
                user_id=user_id,
                slot=slot,
                before_window_opens=before_window_opens,
                source=source,
                grant=grant,
            )
            if outcome.coupon is not None:
                # 5. Keep Redis in step with what the database now holds.
                _sync_after_issue(
                    counter, template_id=template_id, user_id=user_id, terms=facts.terms
                )
                _log_disagreement(template_id, counted, ClaimState.CLAIMABLE)
                return outcome.coupon
            # 5. Refused: why, from facts read after the refusal (counts only grow, so a
            # refusal they confirm was true when the UPDATE made it); Redis synced to them.
            facts = _claim_facts(template_id=template_id, user_id=user_id)
            now = clock.now()
            _sync(counter, template_id=template_id, user_id=user_id, facts=facts, now=now)
            # At least slot - 1 places are taken when slot is tried: that is how it was chosen.
            user_claims = max(facts.user_claims, slot - 1 + outcome.slot_taken)
            state = claim_state(
                facts.terms,
                now=now,
                user_claims=user_claims,
                before_window_opens=before_window_opens,
            )
            if state is not ClaimState.CLAIMABLE:
                _log_disagreement(template_id, counted, state)
                raise REJECTION_BY_STATE[state]()
            slot = user_claims + 1
        raise DatabaseError(f"claim of template {template_id} did not settle")
    except DatabaseError:
        _resync_from_database(counter, template_id=template_id, user_id=user_id)
        raise


# The claim path reads through a plain cursor: Django spends about 1 ms compiling and
# materialising an ORM query here (the annotated facts query: 1.19 ms through the ORM), and a
# RawQuerySet still 0.55 ms of CPU against 0.17 ms for the cursor (docs/DESIGN.md, "Flash
# sale"). The rule's facts, then what the issue and its answer use of the template: a new
# term they need is added to TEMPLATE_SUMMARY_COLUMNS.
TEMPLATE_FACT_COLUMNS = ("total", "claimed_count", "per_user_limit", "valid_from", "valid_until")
TEMPLATE_SUMMARY_COLUMNS = (
    "name",
    "type",
    "value",
    "min_amount",
    "max_discount",
    "scope",
    "scope_ids",
    "visibility",
    "valid_days",
)
CLAIM_FACTS_SQL = (
    f"SELECT {', '.join(TEMPLATE_FACT_COLUMNS + TEMPLATE_SUMMARY_COLUMNS)},"
    " (SELECT COUNT(*) FROM user_coupons u WHERE u.template_id = t.id AND u.user_id = %s)"
    " FROM coupon_templates t WHERE t.id = %s"
)
# The two counts alone, read back after an issue for the sync.
CLAIM_COUNTS_SQL = (
    "SELECT claimed_count,"
    " (SELECT COUNT(*) FROM user_coupons u WHERE u.template_id = t.id AND u.user_id = %s)"
    " FROM coupon_templates t WHERE t.id = %s"
)
# The only statement that waits for the template's row: it counts the claim if, at that
# moment, there is room, the slot is within the limit and the window covers now. It takes
# the row lock; the insert and the commit follow at once.
COUNT_THE_CLAIM_SQL = (
    "UPDATE coupon_templates SET claimed_count = claimed_count + 1"
    " WHERE id = %s AND claimed_count < total AND per_user_limit >= %s"
    " AND valid_from <= %s AND valid_until >= %s"
)
# Under the row lock, with `now` sampled after it: inserts nothing when the window closed
# while the UPDATE waited. The unique (template, user, slot) index refuses a taken slot.
# The coupon's own use window is computed from the template as the facts read it; the last
# line inserts nothing unless the locked row still has those terms (an edit in between makes
# the decision run again on fresh facts), so the stamp is the template's at the decision.
INSERT_COUPON_SQL = (
    "INSERT INTO user_coupons (template_id, user_id, slot, status, valid_from, valid_until,"
    " source, granted_by_id, grant_reason, created_at, updated_at)"
    " SELECT id, %s, %s, 'unused', %s, %s, %s, %s, %s, %s, %s FROM coupon_templates"
    " WHERE id = %s AND valid_from <= %s AND valid_until >= %s"
    " AND valid_from = %s AND valid_until = %s"
    " AND (valid_days = %s OR (valid_days IS NULL AND %s IS NULL))"
)
GRANT_REASON_KEY = "user_coupon_one_grant_per_reason"
# Compared with valid_from when the window's start does not apply (before_window_opens).
END_OF_TIME = datetime(9999, 12, 30, tzinfo=UTC)


def _from_db(column: str, value: Any) -> Any:
    """A template column's raw value as the ORM would give it (aware datetimes, parsed JSON)."""
    if value is None:
        return None
    field = CouponTemplate._meta.get_field(column)
    if isinstance(field, models.DateTimeField):
        return connection.ops.convert_datetimefield_value(value, None, connection)
    if isinstance(field, models.JSONField):
        return field.from_db_value(value, None, connection)
    return value


def _claim_facts(*, template_id: int, user_id: int) -> ClaimFacts:
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_FACTS_SQL, [user_id, template_id])
        row = cursor.fetchone()
    if row is None:
        raise TemplateNotFound()
    *values, user_claims = row
    columns = {
        name: _from_db(name, value)
        for name, value in zip(
            TEMPLATE_FACT_COLUMNS + TEMPLATE_SUMMARY_COLUMNS, values, strict=True
        )
    }
    terms = TemplateFacts(**{name: columns[name] for name in TEMPLATE_FACT_COLUMNS})
    return ClaimFacts(
        template=CouponTemplate(id=template_id, **columns), terms=terms, user_claims=user_claims
    )


def _decide(
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
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(COUNT_THE_CLAIM_SQL, [template.pk, slot, *window_covers(clock.now())])
            if cursor.rowcount == 0:
                return IssueOutcome()
            # Sampled after the lock: time spent waiting for it counts against the window.
            now = clock.now()
            window = template.use_window_at(now)
            cursor.execute(
                INSERT_COUPON_SQL,
                [
                    user_id,
                    slot,
                    adapt(window.valid_from),
                    adapt(window.valid_until),
                    source,
                    grant.granted_by_id if grant else None,
                    grant.reason if grant else None,
                    adapt(now),
                    adapt(now),
                    template.pk,
                    *window_covers(now),
                    adapt(template.valid_from),
                    adapt(template.valid_until),
                    template.valid_days,
                    template.valid_days,
                ],
            )
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


def _claim_terms(template_id: int, terms: TemplateFacts) -> ClaimTerms:
    return ClaimTerms(
        template_id=template_id,
        total=terms.total,
        per_user_limit=terms.per_user_limit,
        valid_from=terms.valid_from,
        valid_until=terms.valid_until,
    )


def _sync(
    counter: AnyCounter, *, template_id: int, user_id: int, facts: ClaimFacts, now: datetime
) -> None:
    counter.sync(
        template_id=template_id,
        user_id=user_id,
        db_claimed=facts.terms.claimed_count,
        db_user=facts.user_claims,
        now=now,
        valid_until=facts.terms.valid_until,
    )


def _log_disagreement(template_id: int, counted: CounterResult | None, decided: ClaimState) -> None:
    if counted is None or decided in STATES_BY_RESULT[counted]:
        return
    logger.info(
        "coupon counter disagreed with the database on template %s: redis=%s db=%s",
        template_id,
        type(counted).__name__,
        decided,
    )


def _resync_from_database(counter: AnyCounter, *, template_id: int, user_id: int) -> None:
    """After a failed claim transaction: put the counters back to the database facts."""
    try:
        facts = _claim_facts(template_id=template_id, user_id=user_id)
    except (DatabaseError, TemplateNotFound):
        logger.exception("could not recount template %s after a failed claim", template_id)
        return
    _sync(counter, template_id=template_id, user_id=user_id, facts=facts, now=clock.now())


def _sync_after_issue(
    counter: AnyCounter, *, template_id: int, user_id: int, terms: TemplateFacts
) -> None:
    """After a committed issue: sync Redis to the counts read back (the UPDATE cannot return
    them). The coupon is issued whatever happens here, so a failed read is only logged."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(CLAIM_COUNTS_SQL, [user_id, template_id])
            db_claimed, db_user = cursor.fetchone()
    except DatabaseError:
        logger.exception("could not read template %s back after a claim", template_id)
        return
    counter.sync(
        template_id=template_id,
        user_id=user_id,
        db_claimed=db_claimed,
        db_user=db_user,
        now=clock.now(),
        valid_until=terms.valid_until,
    )


def coupon_counters_rebuild(*, template_id: int) -> int:
    """Reset one template's Redis counters to the database: the total counter is set to
    claimed_count, per-user counters are dropped and rebuilt from their floors on next claim.
    Returns the claimed_count written. Raises when Redis is unreachable."""
    template = CouponTemplate.objects.filter(pk=template_id).only("claimed_count").first()
    if template is None:
        raise TemplateNotFound()
    coupon_counter().rebuild_template(template_id=template_id, db_claimed=template.claimed_count)
    return template.claimed_count


# --- Grants (SPEC section 11) -----------------------------------------------------------------

MAX_GRANT_USERS = 1000


@dataclass(frozen=True)
class GrantResult:
    """The requested users sorted by outcome, each list in the order given. Beyond the
    SPEC's four lists: `already_granted` (this template was granted to them for this reason
    before, so a re-run issues nothing twice) and `ended` (the template ended mid-batch)."""

    granted: list[int]
    limit_reached: list[int]
    sold_out: list[int]
    unknown_user: list[int]
    already_granted: list[int]
    ended: list[int]


def coupon_grant(
    *,
    template_id: int,
    user_ids: Sequence[int],
    reason: str,
    granted_by_id: int | None,
    on_progress: Callable[[int], None] | None = None,
) -> GrantResult:
    """Staff issue a template to chosen users, one issue per user through `coupon_issue` (the
    claim's locking, total and per-user limit), allowed before the claim window opens but not
    once the template has ended. Idempotent per (template, user, reason). Runs its own
    transactions; `on_progress(done)` is called after each user."""
    reason = reason.strip() if isinstance(reason, str) else ""
    errors: dict[str, list[str]] = {}
    if not 1 <= len(reason) <= GRANT_REASON_MAX_LENGTH:
        errors["reason"] = [f"1 to {GRANT_REASON_MAX_LENGTH} characters are required."]
    if not 1 <= len(user_ids) <= MAX_GRANT_USERS:
        errors["user_ids"] = [f"Between 1 and {MAX_GRANT_USERS} user ids are required."]
    if errors:
        raise TemplateInvalid("Invalid grant.", fields=errors)
    template = CouponTemplate.objects.filter(pk=template_id).only("valid_until").first()
    if template is None:
        raise TemplateNotFound()
    if clock.now() > template.valid_until:
        raise ClaimNotInWindow("This coupon has ended; it can no longer be granted.")

    wanted = list(dict.fromkeys(user_ids))  # repeats dropped, order kept
    known = set(get_user_model().objects.filter(pk__in=wanted).values_list("pk", flat=True))
    held = set(
        UserCoupon.objects.filter(
            template_id=template_id, grant_reason=reason, user_id__in=wanted
        ).values_list("user_id", flat=True)
    )
    note = GrantNote(granted_by_id=granted_by_id, reason=reason)
    result = GrantResult([], [], [], [], [], [])
    for done, user_id in enumerate(wanted, start=1):
        _grant_one(template_id, user_id, note, known=known, held=held, result=result)
        if on_progress is not None:
            on_progress(done)
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
    else:
        result.granted.append(user_id)
