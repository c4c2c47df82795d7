"""The claim's SQL: the facts read in one query, the guarded UPDATE that counts a claim and
the INSERT of the coupon. The third writing of the claim rule (after coupons.rules and the Lua
script), held to the rule's grid by tests/coupons/test_claim_sql_grid.py."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, models

from coupons.errors import (
    TemplateNotFound,
)
from coupons.grant_reasons import reason_key
from coupons.models import (
    CouponTemplate,
    UseWindow,
)
from coupons.rules import TemplateFacts


@dataclass(frozen=True)
class ClaimFacts:
    """A template and one user's coupons of it, read from committed data in one query."""

    template: CouponTemplate  # the row as read, for the response's template summary
    terms: TemplateFacts
    user_claims: int


# The claim path reads through a plain cursor: Django spends about 1 ms compiling and
# materialising an ORM query here (the annotated facts query: 1.19 ms through the ORM), and a
# RawQuerySet still 0.55 ms of CPU against 0.17 ms for the cursor
# (docs/measurements/2026-11-30-claim-cpu-in-process.md). The rule's facts, then what the
# issue and its answer use of the template: a new term they need is added to
# TEMPLATE_SUMMARY_COLUMNS.
TEMPLATE_FACT_COLUMNS = (
    "total",
    "claimed_count",
    "per_user_limit",
    "valid_from",
    "valid_until",
    "paused_at",
    "audience",
)
TEMPLATE_SUMMARY_COLUMNS = (
    "updated_at",  # the terms' version (coupons.issuing.terms_cache)
    "name",
    "type",
    "value",
    "min_amount",
    "max_discount",
    "scope",
    "scope_ids",
    "excluded_product_ids",
    "excluded_category_ids",
    "one_unit_only",
    "visibility",
    "valid_days",
    "has_single_use_codes",
    "incarnation",  # the Redis counts' key (coupons/issuing/counter.py)
    "campaign_id",  # whose budget, once spent, refuses its claims (coupons/campaigns/budget.py)
)
CLAIM_FACTS_SQL = (
    f"SELECT {', '.join(TEMPLATE_FACT_COLUMNS + TEMPLATE_SUMMARY_COLUMNS)},"
    " (SELECT COUNT(*) FROM user_coupons u WHERE u.template_id = t.id AND u.user_id = %s)"
    " FROM coupon_templates t WHERE t.id = %s"
)
# The only statement that waits for the template's row: it counts the claim if, at that
# moment, the template is not paused, there is room, the slot is within the limit and the
# window covers now, and the audience and the reach are still those the decision read (the
# audience's own check, a lookup of the user's orders, ran before it in the same transaction;
# a claim by id reaches public templates only, a template with single-use codes only by one
# of them or a grant). It takes the row lock; the insert and the commit follow at once (on
# MySQL in the same call: CALL_DECIDE_SQL).
# LAST_INSERT_ID(expr) hands the new count back in the UPDATE's own reply (the cursor's
# lastrowid): no read after it.
COUNT_THE_CLAIM_GUARD = (
    " WHERE id = %s AND claimed_count < total AND per_user_limit >= %s"
    " AND valid_from <= %s AND valid_until >= %s"
    " AND paused_at IS NULL AND audience = %s AND (has_single_use_codes = 0 OR %s)"
    " AND (visibility = 'public' OR %s)"
)
COUNT_THE_CLAIM_SQL = (
    "UPDATE coupon_templates SET claimed_count = LAST_INSERT_ID(claimed_count + 1)"
    + COUNT_THE_CLAIM_GUARD
)
# Before it, for a single-use code: takes the code, once. Its row lock queues racing users
# on the code; the one that wins commits with the coupon, or rolls back and frees the code.
USE_SINGLE_USE_CODE_SQL = (
    "UPDATE coupon_single_use_codes SET used_by_id = %s, used_at = %s"
    " WHERE id = %s AND template_id = %s AND used_at IS NULL"
)
# SQLite (`make run` without DATABASE_URL) has no LAST_INSERT_ID(expr): the same guard, with
# the new count in the UPDATE's RETURNING row.
COUNT_THE_CLAIM_RETURNING_SQL = (
    "UPDATE coupon_templates SET claimed_count = claimed_count + 1"
    + COUNT_THE_CLAIM_GUARD
    + " RETURNING claimed_count"
)


def count_the_claim(cursor: Any, *, vendor: str, params: list) -> int | None:
    """Run the guarded UPDATE (ClaimCount.params); the template's new claimed count, or None
    when it counted nothing (paused, no room, the slot over the limit, outside the window, the
    audience changed, or a template with single-use codes reached otherwise)."""
    if vendor == "mysql":
        cursor.execute(COUNT_THE_CLAIM_SQL, params)
        return cursor.lastrowid if cursor.rowcount == 1 else None
    cursor.execute(COUNT_THE_CLAIM_RETURNING_SQL, params)
    row = cursor.fetchone()
    return None if row is None else row[0]


# Under the row lock, with `now` sampled after it: inserts nothing when the window closed
# while the UPDATE waited. The unique (template, user, slot) index refuses a taken slot.
# The coupon's own use window is computed from the template as the facts read it; the last
# line inserts nothing unless the locked row still has those terms (an edit in between makes
# the decision run again on fresh facts), so the stamp is the template's at the decision.
INSERT_COUPON_SQL = (
    "INSERT INTO user_coupons (template_id, user_id, slot, status, valid_from, valid_until,"
    " source, granted_by_id, grant_reason, grant_reason_key, created_at, updated_at)"
    " SELECT id, %s, %s, 'unused', %s, %s, %s, %s, %s, %s, %s, %s FROM coupon_templates"
    " WHERE id = %s AND valid_from <= %s AND valid_until >= %s"
    " AND valid_from = %s AND valid_until = %s"
    " AND (valid_days = %s OR (valid_days IS NULL AND %s IS NULL))"
)


@dataclass(frozen=True)
class CouponInsert:
    """What INSERT_COUPON_SQL writes and checks, by name: `params` puts them in the statement's
    order (17 placeholders), so the service and the measurement scripts cannot drift apart."""

    template_id: int
    user_id: int
    slot: int
    coupon_window: UseWindow  # the coupon's own use window, stamped at issue
    source: str
    granted_by_id: int | None
    grant_reason: str | None
    now: datetime
    window_opens_by: datetime  # `now`, or END_OF_TIME when the window's start does not apply
    template_window: UseWindow  # the template's window as the decision read it
    template_valid_days: int | None

    def params(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> list:
        """The statement's parameters; `adapt` turns a datetime into the driver's value."""
        return [
            self.user_id,
            self.slot,
            adapt(self.coupon_window.valid_from),
            adapt(self.coupon_window.valid_until),
            self.source,
            self.granted_by_id,
            self.grant_reason,
            None if self.grant_reason is None else reason_key(self.grant_reason),
            adapt(self.now),
            adapt(self.now),
            self.template_id,
            adapt(self.window_opens_by),
            adapt(self.now),
            adapt(self.template_window.valid_from),
            adapt(self.template_window.valid_until),
            self.template_valid_days,
            self.template_valid_days,
        ]


@dataclass(frozen=True)
class ClaimCount:
    """What COUNT_THE_CLAIM_SQL checks, by name: `params` puts them in the statement's order."""

    template_id: int
    slot: int
    window_opens_by: datetime  # `now`, or END_OF_TIME when the window's start does not apply
    now: datetime
    audience: str  # as the decision read it
    reachable_with_codes: bool  # a grant or a single-use code; not a claim by id or shared code
    reachable_hidden: bool  # a code or a grant; not a claim by id

    def params(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> list:
        return [
            self.template_id,
            self.slot,
            adapt(self.window_opens_by),
            adapt(self.now),
            self.audience,
            self.reachable_with_codes,
            self.reachable_hidden,
        ]


@dataclass(frozen=True)
class Decided:
    """What the one-call decision did: the template's new count and the coupon's id (both
    None when it counted nothing), and how long the UPDATE waited for the row lock."""

    claimed_count: int | None
    coupon_id: int | None
    waited: timedelta


# MySQL: the guarded UPDATE, the INSERT and the COMMIT in one round trip, by the procedure of
# coupons/migrations/0014_claim_records_its_idempotency_effect.py
# (docs/decisions/0700-claim-decision-in-one-call.md): the row lock is taken and released
# inside the server, never held across the client's Python. Its parameters are ClaimCount's,
# then CouponInsert's, then the Idempotency-Key record that commits with the coupon
# (`decide_in_one_call`).
CALL_DECIDE_SQL = "CALL coupon_decide(" + ", ".join(["%s"] * 18) + ")"


def decide_in_one_call(
    cursor: Any,
    count: "ClaimCount",
    insert: CouponInsert,
    adapt: Callable[[datetime], Any],
    *,
    idempotency_record_id: int | None,
) -> Decided:
    """Count the claim and insert the coupon (and write its id into the request's
    Idempotency-Key record, if any), committed or rolled back by the server; the decision's
    transaction is over when this returns or raises."""
    cursor.execute(
        CALL_DECIDE_SQL,
        [
            *count.params(adapt),
            insert.user_id,
            adapt(insert.coupon_window.valid_from),
            adapt(insert.coupon_window.valid_until),
            insert.source,
            insert.granted_by_id,
            insert.grant_reason,
            None if insert.grant_reason is None else reason_key(insert.grant_reason),
            adapt(insert.template_window.valid_from),
            adapt(insert.template_window.valid_until),
            insert.template_valid_days,
            idempotency_record_id,
        ],
    )
    claimed_count, coupon_id, waited = cursor.fetchone()
    return Decided(claimed_count, coupon_id, timedelta(microseconds=waited or 0))


GRANT_REASON_KEY = "user_coupon_one_grant_per_reason"
# Compared with valid_from when the window's start does not apply (before_window_opens).
END_OF_TIME = datetime(9999, 12, 30, tzinfo=UTC)


def _from_db(column: str, value: Any) -> Any:
    """A template column's raw value as the ORM would give it (aware datetimes, parsed JSON)."""
    if value is None:
        return None
    field = CouponTemplate._meta.get_field(column)
    if isinstance(field, models.DateTimeField):
        # MySQL's operations have this converter; the stubs type only the base class.
        convert = connection.ops.convert_datetimefield_value  # type: ignore[attr-defined]
        return convert(value, None, connection)
    if isinstance(field, models.BooleanField):
        return bool(value)
    if isinstance(field, models.JSONField):
        # JSONField ignores the expression, as the ORM's own calls for raw SQL show.
        return field.from_db_value(value, None, connection)  # type: ignore[arg-type]
    return value


def claim_facts(*, template_id: int, user_id: int) -> ClaimFacts:
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
    terms = TemplateFacts(
        total=columns["total"],
        claimed_count=columns["claimed_count"],
        per_user_limit=columns["per_user_limit"],
        valid_from=columns["valid_from"],
        valid_until=columns["valid_until"],
        paused=columns["paused_at"] is not None,
        new_customers_only=columns["audience"] == CouponTemplate.Audience.NEW_CUSTOMERS,
    )
    return ClaimFacts(
        template=CouponTemplate(id=template_id, **columns), terms=terms, user_claims=user_claims
    )
