"""The shopper list (`GET /api/coupons`, SPEC sections 5 and 15): one database statement per
request beyond authentication, and no Redis.

The published terms of every public template (name, type, value, window, total, limit ...)
are kept in this process, already rendered, under the version held in the one row of
PublishedTermsVersion. That row gets a fresh random version in the same transaction as every
publish, edit, delete, pause and resume (SPEC section 18): each service calls
`published_terms_changed` in its transaction. Each request then sends one statement: the
version, and for the templates of its page their `claimed_count` and the caller's own count.
When the version is not the one the terms were loaded under (or a template of the page is
gone), the terms are read again, with the version, in one statement, and the page is
answered from that read.

So, per SPEC section 15: an edit is seen by the first request that starts after it committed,
in every process, whatever Redis does (the version lives in the database and is read in the
request's own statement); `claimed_count`, `sold_out` and `claimed_by_me` are read at request
time, not cached; `not_started` / `ended` are decided with the request's `now`.
docs/decisions/0220-shopper-list-terms-in-memory.md has the alternatives and the numbers."""

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Subquery
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from core.read_routing import replica_reads
from coupons import selectors
from coupons.customers import customer_history
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.published_terms import PublishedTermsVersion
from coupons.rules import ClaimState, TemplateFacts, claim_state
from coupons.terms import SHOPPER_TERMS, template_facts

_DATETIME_TERMS = frozenset({"valid_from", "valid_until"})
_datetime = serializers.DateTimeField()  # DRF's own rendering, as the serializer's field
_json = JSONRenderer()  # the API's renderer: the kept JSON is byte for byte what it gives


@dataclass(frozen=True)
class ListedTemplate:
    """A public template's terms as loaded: the facts the claim rule needs (their
    claimed_count as loaded; each request reads its own), and the API's rendering of the terms
    (id first), ready to be copied into each answer."""

    id: int
    facts: TemplateFacts
    rendered: dict[str, Any]
    json_head: bytes  # `rendered` as the API's JSON, without its closing brace


@dataclass(frozen=True)
class PublishedTerms:
    """Every public template, newest first, as of `version` (None: no version row, so the
    terms cannot be kept and are read again by every request)."""

    version: int | None
    templates: tuple[ListedTemplate, ...]


@dataclass(frozen=True)
class TemplateCounts:
    """Read at request time, never kept."""

    claimed_count: int
    claimed_by_me: int


@dataclass(frozen=True)
class ListedItem:
    """One template of the caller's page, with the state the claim rule gives it."""

    template: ListedTemplate
    counts: TemplateCounts
    state: ClaimState

    def data(self) -> dict[str, Any]:
        """What ShopperTemplateSerializer gives for this template and caller."""
        return {
            **self.template.rendered,
            "scope_ids": list(self.template.rendered["scope_ids"]),
            "claimed_count": self.counts.claimed_count,
            "claimed_by_me": self.counts.claimed_by_me,
            "state": self.state.value,
        }

    def json(self) -> bytes:
        """`data()` as the API's JSON: the kept terms and three fields of this request."""
        return self.template.json_head + b',"claimed_count":%d,"claimed_by_me":%d,"state":"%s"}' % (
            self.counts.claimed_count,
            self.counts.claimed_by_me,
            self.state.value.encode(),
        )


_published: PublishedTerms | None = None  # replaced whole, never mutated (threads share it)


def shopper_page(
    *,
    user_id: int,
    now: datetime,
    paginate: Callable[[Sequence[ListedTemplate]], list[ListedTemplate]],
) -> list[ListedItem]:
    """The caller's page of the shopper list: `paginate` picks the page (the view's
    paginator) from the public templates, newest first; each item's `state` is decided by
    the claim rule at `now`."""
    global _published
    published = _published
    if published is not None:
        page = paginate(published.templates)
        version, counts = _page_counts(user_id=user_id, template_ids=[t.id for t in page])
        if version is None or version != published.version or len(counts) != len(page):
            published = None
    if published is None:
        published, counts = _published_terms_read(user_id=user_id)
        if published.version is not None:
            _published = published
        page = paginate(published.templates)
    # The audience's fact, looked up (one more statement) only for a page that asks for it.
    has_paid_order = (
        customer_history().has_paid_order(user_id=user_id)
        if any(template.facts.new_customers_only for template in page)
        else None
    )
    return [
        _item(template, counts[template.id], now=now, has_paid_order=has_paid_order)
        for template in page
    ]


def page_json(envelope: dict[str, Any], items: list[ListedItem]) -> bytes:
    """What the API's JSONRenderer gives for `{**envelope, "results": [item.data() ...]}`,
    byte for byte, without rendering the terms again: rendering 20 items cost about 0.25 ms
    of CPU per request, more than half of what the list cost over the baseline
    (docs/decisions/0220-shopper-list-terms-in-memory.md)."""
    head = _json.render(envelope)[:-1]  # the envelope's keys, without the closing brace
    return head + b',"results":[' + b",".join(item.json() for item in items) + b"]}"


def published_terms_changed() -> None:
    """Give the published terms a new version, so that every process reads them again on its
    next list request. Call it in the transaction of every write that changes what the list
    shows of a template (no signal does it): the template services, `bulk_create`."""
    global _published
    version = secrets.randbits(62)  # random, not +1: a deleted row must not reuse a version
    if not PublishedTermsVersion.objects.filter(pk=PublishedTermsVersion.ROW_ID).update(
        version=version
    ):
        PublishedTermsVersion.objects.get_or_create(
            pk=PublishedTermsVersion.ROW_ID, defaults={"version": version}
        )
    _published = None


def _page_counts(
    *, user_id: int, template_ids: list[int]
) -> tuple[int | None, dict[int, TemplateCounts]]:
    """The one statement of a request: the terms' version, and each page template's
    claimed_count and the caller's count (the (template_id, user_id, slot) index). The
    version is None when it could not be read (no row, or none of the page's templates)."""
    version = f"SELECT version FROM {PublishedTermsVersion._meta.db_table} WHERE id = %s"
    if template_ids:
        # Driven by the templates' primary key; the version is an uncorrelated subquery (read
        # once). A LEFT JOIN from the version row would scan every template instead, and a
        # correlated COUNT(*) per template cost MariaDB about 0.06 ms more than this join.
        sql = (
            f"SELECT ({version}), t.id, t.claimed_count, COUNT(c.slot)"
            f" FROM {CouponTemplate._meta.db_table} t"
            f" LEFT JOIN {UserCoupon._meta.db_table} c"
            "  ON c.template_id = t.id AND c.user_id = %s"
            f" WHERE t.id IN ({', '.join(['%s'] * len(template_ids))})"
            " GROUP BY t.id, t.claimed_count"
        )
        params = [PublishedTermsVersion.ROW_ID, user_id, *template_ids]
    else:  # a page past the end: only the version
        sql, params = version, [PublishedTermsVersion.ROW_ID]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows or rows[0][0] is None:
        return None, {}
    if not template_ids:
        return int(rows[0][0]), {}
    counts = {
        int(template_id): TemplateCounts(claimed_count=int(claimed), claimed_by_me=int(mine))
        for _, template_id, claimed, mine in rows
    }
    return int(rows[0][0]), counts


def _published_terms_read(*, user_id: int) -> tuple[PublishedTerms, dict[int, TemplateCounts]]:
    """Every public template's terms with the version, from one snapshot (one statement),
    and the counts of all of them for this caller."""
    version_row = PublishedTermsVersion.objects.filter(pk=PublishedTermsVersion.ROW_ID)
    rows = (
        selectors.templates_for_shopper(user_id=user_id)
        .annotate(terms_version=Subquery(version_row.values("version")))
        .values(
            "id", *SHOPPER_TERMS, "paused_at", "claimed_count", "claimed_by_me", "terms_version"
        )
    )
    templates: list[ListedTemplate] = []
    counts: dict[int, TemplateCounts] = {}
    versions: set[int | None] = set()
    # On the replica when there is one: its session waits for the cluster (wsrep_sync_wait),
    # so the version, the counts and the caller's own claims are as current as on the writer.
    with replica_reads():
        rows_read = list(rows)
    for row in rows_read:
        templates.append(_listed(row))
        counts[row["id"]] = TemplateCounts(
            claimed_count=row["claimed_count"], claimed_by_me=row["claimed_by_me"]
        )
        versions.add(row["terms_version"])
    # No rows: the version was not read, so nothing is kept (the next request reads again).
    version = versions.pop() if len(versions) == 1 else None
    return PublishedTerms(version=version, templates=tuple(templates)), counts


def _listed(row: dict[str, Any]) -> ListedTemplate:
    rendered: dict[str, Any] = {"id": row["id"]}
    for term in SHOPPER_TERMS:
        value = row[term]
        rendered[term] = _datetime.to_representation(value) if term in _DATETIME_TERMS else value
    return ListedTemplate(
        id=row["id"],
        facts=template_facts(row),
        rendered=rendered,
        json_head=_json.render(rendered)[:-1],
    )


def _item(
    template: ListedTemplate,
    counts: TemplateCounts,
    *,
    now: datetime,
    has_paid_order: bool | None,
) -> ListedItem:
    facts = replace(template.facts, claimed_count=counts.claimed_count)
    state = claim_state(
        facts, now=now, user_claims=counts.claimed_by_me, has_paid_order=has_paid_order
    )
    return ListedItem(template=template, counts=counts, state=state)
