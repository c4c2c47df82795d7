"""The claim's guarded SQL (coupons/services/claim_sql.py: the counting UPDATE and the coupon's
INSERT, run by the decision transaction) is the third writing of the claim rule, after
coupons.rules and the Lua script. Held here to `claim_state` on the rule's grid: for every
case, the SQL issues a coupon exactly when the rule says CLAIMABLE (issue 14)."""

import pytest

from coupons.models import CouponTemplate, UserCoupon
from coupons.rules import ClaimState, claim_state
from coupons.services.claim_sql import claim_facts
from coupons.services.decision import decide
from tests.support.claim_grid import NOW, grid_cases
from tests.support.factories import (
    CouponTemplateFactory,
    PaidOrderFactory,
    UserCouponFactory,
    UserFactory,
)


def template_with(facts, *, user, user_claims: int) -> CouponTemplate:
    """A template row holding `facts`, and `user_claims` coupons of it held by `user`."""
    template = CouponTemplateFactory(
        total=max(facts.total, user_claims),
        per_user_limit=facts.per_user_limit,
        valid_from=facts.valid_from,
        valid_until=facts.valid_until,
        paused_at=NOW if facts.paused else None,
        audience="new_customers" if facts.new_customers_only else "all",
    )
    for _ in range(user_claims):
        UserCouponFactory(template=template, user=user)
    CouponTemplate.objects.filter(pk=template.pk).update(
        total=facts.total, claimed_count=facts.claimed_count
    )
    return template


@pytest.mark.django_db
@pytest.mark.parametrize("before_window_opens", [False, True], ids=["claim", "grant"])
def test_the_guarded_sql_issues_exactly_when_the_rule_says_claimable(
    frozen_now, before_window_opens
):
    assert frozen_now.now() == NOW
    verdicts, seen = {}, set()
    for facts, user_claims, has_paid_order in grid_cases():
        user = UserFactory()
        if has_paid_order:
            PaidOrderFactory(user=user)
        template = template_with(facts, user=user, user_claims=user_claims)
        read = claim_facts(template_id=template.pk, user_id=user.pk)
        assert (read.terms, read.user_claims) == (facts, user_claims)  # the case as meant

        outcome = decide(
            template=read.template,
            user_id=user.pk,
            slot=user_claims + 1,
            before_window_opens=before_window_opens,
            source=UserCoupon.Source.CLAIM,
            grant=None,
        )

        rule = claim_state(
            facts,
            now=NOW,
            user_claims=user_claims,
            has_paid_order=has_paid_order,
            before_window_opens=before_window_opens,
        )
        sql_issued = outcome.coupon is not None
        issued_rows = UserCoupon.objects.filter(template=template).count() - user_claims
        counted = CouponTemplate.objects.values_list("claimed_count", flat=True).get(pk=template.pk)
        verdicts[(facts, user_claims, has_paid_order)] = (rule, sql_issued)
        seen.add(rule)
        # Nothing half-written: a coupon and its count together, or neither.
        assert issued_rows == int(sql_issued)
        assert counted == facts.claimed_count + int(sql_issued)

    disagreements = {
        case: verdict
        for case, verdict in verdicts.items()
        if (verdict[0] is ClaimState.CLAIMABLE) != verdict[1]
    }
    assert disagreements == {}
    expected_states = {ClaimState.ENDED, ClaimState.SOLD_OUT, ClaimState.LIMIT_REACHED}
    expected_states |= {ClaimState.PAUSED, ClaimState.NOT_ELIGIBLE}
    expected_states |= {ClaimState.CLAIMABLE}
    if not before_window_opens:
        expected_states.add(ClaimState.NOT_STARTED)
    assert seen == expected_states  # the grid reaches every branch of the rule
