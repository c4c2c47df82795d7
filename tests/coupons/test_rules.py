"""The one claim rule (coupons.rules): its order, its SQL form for the admin filter, and the Lua
claim script's return codes, all held to `claim_state`."""

import functools
import time

import pytest
from django.conf import settings

from coupons.issuing.screen_answers import (
    REFUSALS,
    CachedTerms,
    CouponMayHaveRoom,
    CouponRefused,
    CouponTermsMissing,
    ScreenAnswer,
    ScreenResult,
)
from coupons.issuing.steps import REJECTION_BY_STATE, rejection_of
from coupons.models import CouponTemplate
from coupons.rules import ClaimState, TemplateFacts, claim_state, template_state_where
from tests.support.claim_grid import GRID, MS, NOW, PROMOTION_GRID, grid_cases
from tests.support.factories import CouponTemplateFactory
from tests.support.helpers import counter_at


def states_of(counted: ScreenResult) -> frozenset[ClaimState]:
    """The claim rule's states a screen result stands for."""
    if isinstance(counted, CouponRefused):
        return counted.answer.states
    assert isinstance(counted, CouponMayHaveRoom), counted
    return ScreenAnswer.MAY_HAVE_ROOM.states


def test_each_refusal_of_the_script_is_the_error_of_each_state_it_stands_for():
    for answer in REFUSALS:
        assert answer.states
        errors = {REJECTION_BY_STATE[state] for state in answer.states}
        assert errors == {rejection_of(CouponRefused(answer))}, answer
    # Every state Redis can know of; the audience is the user's fact, the database's alone.
    every_state = set(REJECTION_BY_STATE) | {ClaimState.CLAIMABLE}
    assert {state for answer in ScreenAnswer for state in answer.states} == every_state - {
        ClaimState.NOT_ELIGIBLE
    }


def test_the_rule_checks_window_then_total_then_the_limit():
    ended_sold_out_at_limit = TemplateFacts(
        total=1, claimed_count=1, per_user_limit=1, valid_from=NOW - MS * 2, valid_until=NOW - MS
    )
    assert claim_state(ended_sold_out_at_limit, now=NOW, user_claims=1) is ClaimState.ENDED
    sold_out_at_limit = TemplateFacts(
        total=1, claimed_count=1, per_user_limit=1, valid_from=NOW, valid_until=NOW
    )
    assert claim_state(sold_out_at_limit, now=NOW, user_claims=1) is ClaimState.SOLD_OUT
    at_limit = TemplateFacts(
        total=2, claimed_count=1, per_user_limit=1, valid_from=NOW, valid_until=NOW
    )
    assert claim_state(at_limit, now=NOW, user_claims=1) is ClaimState.LIMIT_REACHED
    assert claim_state(at_limit, now=NOW, user_claims=0) is ClaimState.CLAIMABLE
    assert claim_state(at_limit, now=NOW, user_claims=None) is ClaimState.ACTIVE


def test_the_rule_checks_paused_after_the_window_and_the_audience_before_the_total():
    def facts(**changes) -> TemplateFacts:
        open_sold_out = dict(
            total=1, claimed_count=1, per_user_limit=1, valid_from=NOW, valid_until=NOW
        )
        return TemplateFacts(**(open_sold_out | changes))

    paused_new_only = facts(paused=True, new_customers_only=True)
    ended = facts(valid_until=NOW - MS, valid_from=NOW - MS * 2, paused=True)
    assert claim_state(ended, now=NOW, user_claims=1, has_paid_order=True) is ClaimState.ENDED
    assert (
        claim_state(paused_new_only, now=NOW, user_claims=1, has_paid_order=True)
        is ClaimState.PAUSED
    )
    new_only = facts(new_customers_only=True)
    assert (
        claim_state(new_only, now=NOW, user_claims=1, has_paid_order=True)
        is ClaimState.NOT_ELIGIBLE
    )
    assert (
        claim_state(new_only, now=NOW, user_claims=1, has_paid_order=False) is ClaimState.SOLD_OUT
    )
    # The template-level view has no user, so no audience: a paused one is paused.
    assert claim_state(paused_new_only, now=NOW, user_claims=None) is ClaimState.PAUSED
    assert claim_state(facts(total=2, new_customers_only=True), now=NOW, user_claims=None) is (
        ClaimState.ACTIVE
    )
    # Grants skip the window's start, never the pause.
    not_started_paused = facts(total=2, valid_from=NOW + MS, valid_until=NOW + MS, paused=True)
    assert (
        claim_state(not_started_paused, now=NOW, user_claims=0, before_window_opens=True)
        is ClaimState.PAUSED
    )


def test_a_new_customers_template_needs_the_users_fact():
    new_only = TemplateFacts(
        total=2,
        claimed_count=0,
        per_user_limit=1,
        valid_from=NOW,
        valid_until=NOW,
        new_customers_only=True,
    )
    with pytest.raises(ValueError):
        claim_state(new_only, now=NOW, user_claims=0)
    assert claim_state(new_only, now=NOW, user_claims=0, has_paid_order=False) is (
        ClaimState.CLAIMABLE
    )


def test_before_window_opens_skips_only_the_start():
    facts = TemplateFacts(
        total=2, claimed_count=1, per_user_limit=1, valid_from=NOW + MS, valid_until=NOW + MS
    )
    assert claim_state(facts, now=NOW, user_claims=0) is ClaimState.NOT_STARTED
    assert (
        claim_state(facts, now=NOW, user_claims=0, before_window_opens=True) is ClaimState.CLAIMABLE
    )
    assert (
        claim_state(facts, now=NOW + MS * 2, user_claims=0, before_window_opens=True)
        is ClaimState.ENDED
    )


@pytest.mark.django_db
def test_the_admin_filter_selects_exactly_the_templates_the_rule_puts_in_each_state():
    templates = {
        CouponTemplateFactory(
            total=facts.total,
            per_user_limit=facts.per_user_limit,
            valid_from=facts.valid_from,
            valid_until=facts.valid_until,
            paused_at=NOW if facts.paused else None,
            audience="new_customers" if facts.new_customers_only else "all",
        ).pk: facts
        for facts in GRID + PROMOTION_GRID
    }
    CouponTemplate.objects.bulk_update(
        [
            CouponTemplate(pk=pk, claimed_count=facts.claimed_count)
            for pk, facts in templates.items()
        ],
        ["claimed_count"],
    )

    for state in (
        ClaimState.NOT_STARTED,
        ClaimState.ENDED,
        ClaimState.PAUSED,
        ClaimState.SOLD_OUT,
        ClaimState.ACTIVE,
    ):
        selected = set(
            CouponTemplate.objects.filter(template_state_where(state, now=NOW)).values_list(
                "pk", flat=True
            )
        )
        expected = {
            pk
            for pk, facts in templates.items()
            if claim_state(facts, now=NOW, user_claims=None) is state
        }
        assert selected == expected, state
        assert expected  # the grid reaches every state


REFUSED_BEFORE_THE_AUDIENCE = {ClaimState.NOT_STARTED, ClaimState.ENDED, ClaimState.PAUSED}


def test_the_lua_claim_script_refuses_exactly_what_the_rule_decides(redis_namespace):
    """claim.lua with the database's facts in Redis (terms, claimed count, the user's count),
    for every branch of the rule: each refusal is the rule's, and where the rule admits, Redis
    sends the claim to the database. Without the terms it refuses nothing."""
    counter = counter_at(settings.COUPON_COUNTER_REDIS_URL, prefix=redis_namespace)
    seen = set()
    for template_id, (facts, user_claims, has_paid_order) in enumerate(grid_cases(), start=1):
        decided = claim_state(
            facts, now=NOW, user_claims=user_claims, has_paid_order=has_paid_order
        )
        screen = functools.partial(
            counter.screen,
            template_id=template_id,
            user_id=7,
            now=NOW,
            throttle_limit=1000,
            window=1,
            throttle_period=60,
        )
        counter.record(
            template_id=template_id,
            incarnation="a1b2",
            user_id=7,
            db_claimed=facts.claimed_count,
            db_user=user_claims,
            now=NOW,
            valid_until=facts.valid_until,
        )
        assert isinstance(screen(), CouponTermsMissing)
        terms = CachedTerms(
            template_id=template_id,
            incarnation="a1b2",
            version=1,
            total=facts.total,
            per_user_limit=facts.per_user_limit,
            valid_from=facts.valid_from,
            valid_until=facts.valid_until,
            row={},
            paused=facts.paused,
            new_customers_only=facts.new_customers_only,
        )
        assert counter.publish(terms, read_at=time.time())

        counted = screen()

        if facts.new_customers_only and decided not in REFUSED_BEFORE_THE_AUDIENCE:
            # The audience is the user's fact, known to the database only: it decides.
            assert isinstance(counted, CouponMayHaveRoom), (facts, user_claims, counted)
        else:
            assert decided in states_of(counted), (facts, user_claims, counted)
        seen.add(decided)
    assert seen == {
        ClaimState.NOT_STARTED,
        ClaimState.ENDED,
        ClaimState.PAUSED,
        ClaimState.NOT_ELIGIBLE,
        ClaimState.SOLD_OUT,
        ClaimState.LIMIT_REACHED,
        ClaimState.CLAIMABLE,
    }
