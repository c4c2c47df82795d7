"""The claim's SQL: the facts read in one query, the guarded UPDATE that counts a claim and
the INSERT of the coupon. The third writing of the claim rule (after coupons.rules and the Lua
script), held to the rule's grid by tests/coupons/issuing/test_claim_sql_grid.py."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from string import Formatter
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


def bound(terms: str) -> tuple[str, tuple[str, ...]]:
    """A statement written with {name} placeholders, bound for the driver: %s in their place,
    and the names in the order of the %s (a name may come twice)."""
    names = tuple(name for _, name, _, _ in Formatter().parse(terms) if name)
    return terms.format(**dict.fromkeys(names, "%s")), names


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
    "campaign_id",  # whose budget, once spent, refuses its claims (coupons/campaign_budget.py)
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
# MySQL in the same call: procedure.py).
# LAST_INSERT_ID(expr) hands the new count back in the UPDATE's own reply (the cursor's
# lastrowid): no read after it.
COUNT_THE_CLAIM_GUARD_TERMS = (
    "id = {template_id} AND claimed_count < total AND per_user_limit >= {slot}"
    " AND valid_from <= {window_opens_by} AND valid_until >= {now}"
    " AND paused_at IS NULL AND audience = {audience} AND (has_single_use_codes = 0 OR"
    " {reachable_with_codes}) AND (visibility = 'public' OR {reachable_hidden})"
)
COUNT_THE_CLAIM_GUARD, COUNT_THE_CLAIM_PARAMETERS = bound(" WHERE " + COUNT_THE_CLAIM_GUARD_TERMS)
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
COUPON_COLUMNS = (  # each column of the coupon's row, and its value
    ("template_id", "id"),
    ("user_id", "{user_id}"),
    ("slot", "{slot}"),
    ("status", "'unused'"),
    ("valid_from", "{coupon_valid_from}"),
    ("valid_until", "{coupon_valid_until}"),
    ("source", "{source}"),
    ("granted_by_id", "{granted_by_id}"),
    ("grant_reason", "{grant_reason}"),
    ("grant_reason_key", "{grant_reason_key}"),
    ("created_at", "{now}"),
    ("updated_at", "{now}"),
)
COUPON_TERMS_STILL = (
    "id = {template_id} AND valid_from <= {window_opens_by} AND valid_until >= {now}"
    " AND valid_from = {template_valid_from} AND valid_until = {template_valid_until}"
    " AND (valid_days = {template_valid_days}"
    " OR (valid_days IS NULL AND {template_valid_days} IS NULL))"
)
INSERT_COUPON_TERMS = (
    f"INSERT INTO user_coupons ({', '.join(column for column, _ in COUPON_COLUMNS)})"
    f" SELECT {', '.join(value for _, value in COUPON_COLUMNS)} FROM coupon_templates"
    f" WHERE {COUPON_TERMS_STILL}"
)
INSERT_COUPON_SQL, INSERT_COUPON_PARAMETERS = bound(INSERT_COUPON_TERMS)


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

    def values(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> dict[str, Any]:
        """Each parameter by its name in INSERT_COUPON_TERMS; `adapt` turns a datetime into
        the driver's value."""
        return {
            "template_id": self.template_id,
            "user_id": self.user_id,
            "slot": self.slot,
            "coupon_valid_from": adapt(self.coupon_window.valid_from),
            "coupon_valid_until": adapt(self.coupon_window.valid_until),
            "source": self.source,
            "granted_by_id": self.granted_by_id,
            "grant_reason": self.grant_reason,
            "grant_reason_key": None
            if self.grant_reason is None
            else reason_key(self.grant_reason),
            "now": adapt(self.now),
            "window_opens_by": adapt(self.window_opens_by),
            "template_valid_from": adapt(self.template_window.valid_from),
            "template_valid_until": adapt(self.template_window.valid_until),
            "template_valid_days": self.template_valid_days,
        }

    def params(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> list:
        """INSERT_COUPON_SQL's parameters, in its order."""
        values = self.values(adapt)
        return [values[name] for name in INSERT_COUPON_PARAMETERS]


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

    def values(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> dict[str, Any]:
        """Each parameter by its name in COUNT_THE_CLAIM_GUARD_TERMS."""
        return {
            "template_id": self.template_id,
            "slot": self.slot,
            "window_opens_by": adapt(self.window_opens_by),
            "now": adapt(self.now),
            "audience": self.audience,
            "reachable_with_codes": self.reachable_with_codes,
            "reachable_hidden": self.reachable_hidden,
        }

    def params(self, adapt: Callable[[datetime], Any] = lambda moment: moment) -> list:
        """COUNT_THE_CLAIM_SQL's parameters, in its order."""
        values = self.values(adapt)
        return [values[name] for name in COUNT_THE_CLAIM_PARAMETERS]


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
