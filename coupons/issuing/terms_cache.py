"""A template's terms cached in Redis for the claim path (SPEC section 15; docs/decisions/
0200-claim-refusals-from-redis.md): how a row becomes a `CachedTerms` and back, and how a staff
change of the terms takes effect before it returns.

Redis refuses a claim only on terms the database showed. A staff change fences the cached
terms out before it commits and publishes the new ones after; if Redis could not confirm both,
the change waits until every cached copy that could predate it has expired (`terms_lease`
seconds after the database read it came from) before it returns."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from core import clock
from core.leased_copies import after_commit_void_or_wait
from coupons.issuing.counter import epoch_ms
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.screen_answers import CachedTerms
from coupons.models import CouponTemplate
from coupons.terms import CLAIM_PATH_TERMS, template_facts

# What the claim path needs of a template without reading it (coupons/terms.py); a term the
# claim path starts to use is added there (and to the claim's facts query).
ROW_COLUMNS = CLAIM_PATH_TERMS
DATETIME_COLUMNS = frozenset({"valid_from", "valid_until"})
# A deleted template's fence: no terms version is ever this high (it lasts FENCE_TTL_MS, past
# any write-back of terms read before the delete).
DELETED_VERSION = 2**53


def version_of(updated_at: datetime) -> int:
    """The terms version: the row's updated_at in ms (`terms_change` makes it grow)."""
    return epoch_ms(updated_at)


def cached_terms(template: CouponTemplate) -> CachedTerms:
    """The terms of a template read from the database (its updated_at as read)."""
    row = {}
    for column in ROW_COLUMNS:
        value = getattr(template, column)
        row[column] = epoch_ms(value) if column in DATETIME_COLUMNS else value
    facts = template_facts(template)
    return CachedTerms(
        template_id=template.pk,
        incarnation=template.incarnation,
        version=version_of(template.updated_at),
        total=facts.total,
        per_user_limit=facts.per_user_limit,
        valid_from=facts.valid_from,
        valid_until=facts.valid_until,
        row=row,
        paused=facts.paused,
        new_customers_only=facts.new_customers_only,
        claimable_by_id=template.visibility == CouponTemplate.Visibility.PUBLIC
        and not template.has_single_use_codes,
    )


def template_from_row(template_id: int, row: dict[str, Any]) -> CouponTemplate:
    """An unsaved CouponTemplate with the cached terms, for the claim's decision and answer.
    A term the cached row lacks (cached by an older release) takes the field's default."""
    columns = {
        column: _from_ms(row[column]) if column in DATETIME_COLUMNS else row[column]
        for column in ROW_COLUMNS
        if column in row
    }
    return CouponTemplate(id=template_id, **columns)


def _from_ms(value: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)


def next_version(current: datetime) -> datetime:
    """The updated_at a change stamps: now, but always after the row's current one (app
    clocks differ), so that a newer version is always a later change."""
    return max(clock.truncate_to_milliseconds(clock.now()), current + timedelta(milliseconds=1))


@contextmanager
def terms_change(template: CouponTemplate, *, deleting: bool = False) -> Iterator[None]:
    """Wrap a staff change of `template` (locked, as read before the change) inside its
    transaction: fences the cached terms out before the body commits and, once it has,
    publishes the new ones (the body leaves them on `template`). Must run inside
    `transaction.atomic()` holding the row lock, so that changes of one template are ordered.

    When Redis does not confirm both steps, the change still commits, and returns only once
    every cached copy of the old terms has expired."""
    counter = coupon_counter()
    template_id = template.pk  # a deleted template's pk is None after the body
    confirmed = counter.fence(template_id=template_id, version=version_of(template.updated_at) + 1)
    yield

    def publish() -> bool:
        if deleting:
            published = counter.fence(template_id=template_id, version=DELETED_VERSION)
        else:
            published = counter.publish(cached_terms(template), read_at=time.time())
        return confirmed and published

    after_commit_void_or_wait(
        publish, lease_seconds=counter.terms_lease, what=f"the terms of template {template_id}"
    )


def terms_publish_new(template: CouponTemplate) -> None:
    """After a template is created: cache its terms (best effort: a claim reads them from the
    database when they are missing; nothing older can exist)."""
    coupon_counter().publish(cached_terms(template), read_at=time.time())
