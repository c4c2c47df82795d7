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
