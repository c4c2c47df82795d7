"""The claim's guarded SQL (coupons/issuing/claim_sql.py: the counting UPDATE and the coupon's
INSERT, run by the decision transaction) is the third writing of the claim rule, after
coupons.rules and the Lua script. Held here to `claim_state` on the rule's grid: for every
case, the SQL issues a coupon exactly when the rule says CLAIMABLE (issue 14), in both of its
writings: the statements (inside a caller's transaction, and on SQLite) and the MySQL
procedure that runs them in one call on the decision connection (issue 22, migration 0011)."""

from contextlib import contextmanager

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from coupons.issuing.claim_sql import claim_facts
from coupons.issuing.decision import decide
from coupons.models import CouponTemplate, UserCoupon
from coupons.rules import ClaimState, claim_state
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


@contextmanager
def server_clock_frozen_at_now():
    """The decision connection's server clock frozen at NOW, as the app's is: the procedure
    measures the lock's wait with it (none here), and that wait counts against the window."""
    decision = connections["decision"]
    with decision.cursor() as cursor:
        cursor.execute("SET timestamp = %s", [NOW.timestamp()])
    try:
        yield
    finally:
        with decision.cursor() as cursor:
            cursor.execute("SET timestamp = DEFAULT")


IN_A_TRANSACTION = pytest.param("statements", marks=pytest.mark.django_db, id="statements")
ONE_CALL = pytest.param("one call", marks=pytest.mark.django_db(transaction=True), id="procedure")


@pytest.mark.parametrize("path", [IN_A_TRANSACTION, ONE_CALL])
@pytest.mark.parametrize("before_window_opens", [False, True], ids=["claim", "grant"])
def test_the_guarded_sql_issues_exactly_when_the_rule_says_claimable(
    frozen_now, before_window_opens, path
):
    assert frozen_now.now() == NOW
    if path == "one call":
        with server_clock_frozen_at_now(), CaptureQueriesContext(connections["decision"]) as sent:
            verdicts, seen = run_the_grid(before_window_opens)
        sql = [query["sql"] for query in sent.captured_queries]
        # Every case the server decided was one CALL; none was sent as separate statements.
        assert sum(statement.startswith("CALL coupon_decide(") for statement in sql) == len(
            verdicts
        ) - sum(has_paid_order is True for _facts, _claims, has_paid_order in verdicts)
        assert not [statement for statement in sql if statement.startswith(("UPDATE", "INSERT"))]
    else:
        verdicts, seen = run_the_grid(before_window_opens)

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


def run_the_grid(before_window_opens: bool) -> tuple[dict, set]:
    """Each case decided once: {case: (the rule's state, whether the SQL issued)}, and the
    states seen."""
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
    return verdicts, seen
