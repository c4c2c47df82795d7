"""A template's terms are named once (coupons/terms.py): the claim path's columns, the rule's
facts, and the facts read from a row or from a template agree."""

from datetime import UTC, datetime

import pytest

from coupons.issuing.claim_sql import TEMPLATE_FACT_COLUMNS, TEMPLATE_SUMMARY_COLUMNS
from coupons.issuing.terms_cache import ROW_COLUMNS, cached_terms, template_from_row
from coupons.models import CouponTemplate
from coupons.rules import TemplateFacts
from coupons.terms import AUTO_ISSUE_TERMS, CLAIM_PATH_TERMS, TEMPLATE_TERMS, template_facts
from tests.support.factories import CouponTemplateFactory


def test_the_claim_path_reads_and_keeps_the_same_terms():
    read_by_the_facts_query = set(TEMPLATE_FACT_COLUMNS + TEMPLATE_SUMMARY_COLUMNS)

    assert ROW_COLUMNS == CLAIM_PATH_TERMS
    assert set(CLAIM_PATH_TERMS) <= read_by_the_facts_query
    assert set(CLAIM_PATH_TERMS) == set(TEMPLATE_TERMS) - {"code", *AUTO_ISSUE_TERMS} | {
        "has_single_use_codes",
        "incarnation",
        "campaign_id",
    }


@pytest.mark.django_db
def test_the_rule_s_facts_are_the_same_from_a_row_a_template_and_the_cached_terms():
    template = CouponTemplateFactory(
        total=7,
        claimed_count=3,
        per_user_limit=2,
        audience="new_customers",
        paused_at=datetime(2026, 6, 1, tzinfo=UTC),
    )
    row = CouponTemplate.objects.values(*TEMPLATE_FACT_COLUMNS).get(pk=template.pk)
    cached = cached_terms(template)

    from_row, from_template = template_facts(row), template_facts(template)
    rebuilt = template_facts(template_from_row(template.pk, cached.row))

    assert from_row == from_template
    assert from_template == TemplateFacts(
        total=7,
        claimed_count=3,
        per_user_limit=2,
        valid_from=template.valid_from,
        valid_until=template.valid_until,
        paused=True,
        new_customers_only=True,
    )
    assert (cached.total, cached.per_user_limit, cached.paused, cached.new_customers_only) == (
        7,
        2,
        True,
        True,
    )
    # The cached row carries neither the count nor the pause (Redis holds those itself).
    assert (rebuilt.total, rebuilt.per_user_limit, rebuilt.new_customers_only) == (7, 2, True)
