"""A template's terms by name: what staff publish and edit, what a shopper is shown, what the
claim path keeps, and the claim rule's facts read from them."""

from collections.abc import Mapping
from typing import Any

from coupons.models import CouponTemplate
from coupons.rules import TemplateFacts

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
    "excluded_product_ids",
    "excluded_category_ids",
    "one_unit_only",
    "code",
    "visibility",
    "audience",
    "auto_issue",
    "auto_issue_min_pay",
)
# How events issue a template: staff's business, nothing a claim or a shopper reads.
AUTO_ISSUE_TERMS = ("auto_issue", "auto_issue_min_pay")
# A shopper sees only public templates, and codes are handed out, not listed.
SHOPPER_TERMS = tuple(
    term for term in TEMPLATE_TERMS if term not in ("code", "visibility", *AUTO_ISSUE_TERMS)
)
# What the claim path needs of a template without reading it (the terms Redis keeps,
# coupons/issuing/terms_cache.py): the rule's terms, what the issue stamps on the coupon and
# the 201's template summary; a claim by code has found its template already, and a template
# reached only by single-use codes is not claimable by id (SPEC section 18).
CLAIM_PATH_TERMS = (
    *(term for term in TEMPLATE_TERMS if term not in ("code", *AUTO_ISSUE_TERMS)),
    "has_single_use_codes",
    "incarnation",  # what its Redis counts are keyed by (coupons/issuing/counter.py)
    "campaign_id",  # a spent budget refuses its claims (coupons/campaign_budget.py)
)


def template_facts(columns: Mapping[str, Any] | CouponTemplate) -> TemplateFacts:
    """The claim rule's facts of a template: from a row by column name (`.values()`, a raw
    query zipped with its columns) or from a CouponTemplate's attributes."""
    if isinstance(columns, Mapping):
        column = columns.__getitem__
    else:

        def column(name: str) -> Any:
            return getattr(columns, name)

    return TemplateFacts(
        total=column("total"),
        claimed_count=column("claimed_count"),
        per_user_limit=column("per_user_limit"),
        valid_from=column("valid_from"),
        valid_until=column("valid_until"),
        paused=column("paused_at") is not None,
        new_customers_only=column("audience") == CouponTemplate.Audience.NEW_CUSTOMERS,
    )
