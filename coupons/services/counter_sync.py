"""Keeping the Redis counters in step with the database after an issue, a refusal or a failure;
the database always decides (SPEC section 14)."""

import logging
from datetime import datetime

from django.db import DatabaseError, connection

from core import clock
from coupons.counter import (
    STATES_BY_RESULT,
    AnyCounter,
    ClaimTerms,
    CounterResult,
    coupon_counter,
)
from coupons.errors import (
    TemplateNotFound,
)
from coupons.models import (
    CouponTemplate,
)
from coupons.rules import ClaimState, TemplateFacts
from coupons.services.claim_sql import CLAIM_COUNTS_SQL, ClaimFacts, claim_facts

logger = logging.getLogger(__name__)


def counter_terms(template_id: int, terms: TemplateFacts) -> ClaimTerms:
    return ClaimTerms(
        template_id=template_id,
        total=terms.total,
        per_user_limit=terms.per_user_limit,
        valid_from=terms.valid_from,
        valid_until=terms.valid_until,
    )


def sync_to_facts(
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


def log_disagreement(template_id: int, counted: CounterResult | None, decided: ClaimState) -> None:
    if counted is None or decided in STATES_BY_RESULT[counted]:
        return
    logger.info(
        "coupon counter disagreed with the database on template %s: redis=%s db=%s",
        template_id,
        type(counted).__name__,
        decided,
    )


def resync_from_database(counter: AnyCounter, *, template_id: int, user_id: int) -> None:
    """After a failed claim transaction: put the counters back to the database facts."""
    try:
        facts = claim_facts(template_id=template_id, user_id=user_id)
    except (DatabaseError, TemplateNotFound):
        logger.exception("could not recount template %s after a failed claim", template_id)
        return
    sync_to_facts(counter, template_id=template_id, user_id=user_id, facts=facts, now=clock.now())


def sync_after_issue(
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
