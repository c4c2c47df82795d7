"""The claim rule's grid: every boundary of every check (window ends, inclusive; total;
per-user limit), shared by the tests that hold each writing of the rule (Python, the admin's
SQL filter, the Lua script, the claim's guarded SQL) to `coupons.rules.claim_state`."""

import itertools
from datetime import UTC, datetime, timedelta

from coupons.rules import TemplateFacts

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # the frozen_now fixture's instant
MS = timedelta(milliseconds=1)
WINDOWS = [
    (NOW + MS, NOW + timedelta(hours=1)),  # not started
    (NOW, NOW + timedelta(hours=1)),  # opens now
    (NOW - timedelta(hours=1), NOW),  # closes now
    (NOW - timedelta(hours=1), NOW - MS),  # ended
]
COUNTS = [(0, 2), (1, 2), (2, 2), (3, 3)]  # (claimed_count, total)
PER_USER_LIMIT = 2
USER_CLAIMS = [0, 1, 2]  # against the per-user limit of 2
GRID = [
    TemplateFacts(
        total=total,
        claimed_count=claimed,
        per_user_limit=PER_USER_LIMIT,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    for (valid_from, valid_until), (claimed, total) in itertools.product(WINDOWS, COUNTS)
]

# SPEC section 18's steps, between the window and the total: paused, then the audience
# (a new-customers template, and whether the user has a paid order).
PROMOTION_GRID = [
    TemplateFacts(
        total=total,
        claimed_count=claimed,
        per_user_limit=PER_USER_LIMIT,
        valid_from=valid_from,
        valid_until=valid_until,
        paused=paused,
        new_customers_only=new_customers_only,
    )
    for (valid_from, valid_until), (
        claimed,
        total,
    ), paused, new_customers_only in itertools.product(
        WINDOWS, [(0, 2), (2, 2)], [False, True], [False, True]
    )
    if paused or new_customers_only
]


def grid_cases() -> list[tuple[TemplateFacts, int, bool | None]]:
    """Every case of the rule as (facts, the user's claims, has_paid_order): has_paid_order
    is None where the template does not ask for it."""
    cases = [
        (facts, user_claims, None) for facts, user_claims in itertools.product(GRID, USER_CLAIMS)
    ]
    for facts, user_claims in itertools.product(PROMOTION_GRID, USER_CLAIMS):
        if facts.new_customers_only:
            cases += [(facts, user_claims, False), (facts, user_claims, True)]
        else:
            cases.append((facts, user_claims, None))
    return cases
