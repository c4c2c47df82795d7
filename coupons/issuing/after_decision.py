"""Telling Redis what the database showed, after an issue, a refusal or a failure: the counts
as floors, and the template's terms under the lease the claim's screen handed out (SPEC
section 15; docs/decisions/0200-claim-refusals-from-redis.md). The database always decides."""

import logging
from datetime import datetime

from django.db import DatabaseError

from core import clock
from coupons.errors import TemplateNotFound
from coupons.issuing.claim_sql import ClaimFacts, claim_facts
from coupons.issuing.counter_setup import Counter
from coupons.issuing.terms_cache import cached_terms

logger = logging.getLogger(__name__)


def record_facts(
    counter: Counter,
    facts: ClaimFacts,
    *,
    user_id: int,
    now: datetime,
    lease: str | None = None,
    read_at: float | None = None,
) -> None:
    """Tell Redis what the database showed: both counts, and the terms under `lease` (read at
    `read_at`, time.time() before the read)."""
    counter.record(
        template_id=facts.template.pk,
        incarnation=facts.template.incarnation,
        user_id=user_id,
        db_claimed=facts.terms.claimed_count,
        db_user=facts.user_claims,
        now=now,
        valid_until=facts.terms.valid_until,
        terms=None if lease is None else cached_terms(facts.template),
        lease=lease,
        read_at=read_at,
    )


def resync_from_database(counter: Counter, *, template_id: int, user_id: int) -> None:
    """After a failed claim transaction: tell Redis the counts the database holds."""
    try:
        facts = claim_facts(template_id=template_id, user_id=user_id)
    except (DatabaseError, TemplateNotFound):
        logger.exception("could not recount template %s after a failed claim", template_id)
        return
    record_facts(counter, facts, user_id=user_id, now=clock.now())
