"""What the coupon counter (coupons/counter.py) answers and holds: the screen's results, the
terms it caches and the counts it stores. Plain values, no Redis."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from coupons.rules import ClaimState


@dataclass(frozen=True)
class CouponSoldOut:
    pass


@dataclass(frozen=True)
class CouponNotInWindow:
    pass


@dataclass(frozen=True)
class CouponLimitReached:
    pass


@dataclass(frozen=True)
class CouponPaused:
    pass


@dataclass(frozen=True)
class CouponThrottled:
    """The user claimed this template more often than the claim rate allows."""


@dataclass(frozen=True)
class CouponMayHaveRoom:
    """No confirmed fact refuses the claim: the database decides, on these cached terms
    (`row`, as `CachedTerms.row` was written) and the user's count floor (None: unknown)."""

    row: dict[str, Any]
    user_claims: int | None


@dataclass(frozen=True)
class CouponTermsMissing:
    """Redis holds no terms for the template: the database decides, and the claim writes the
    terms it read back to Redis showing `lease`."""

    lease: str


Refusal = CouponSoldOut | CouponNotInWindow | CouponLimitReached | CouponPaused
ScreenResult = Refusal | CouponThrottled | CouponMayHaveRoom | CouponTermsMissing
# The states of the claim rule each result stands for (tests/coupons/test_rules.py runs the
# claim script against coupons.rules.claim_state).
STATES_BY_RESULT: dict[type, frozenset[ClaimState]] = {
    CouponMayHaveRoom: frozenset({ClaimState.CLAIMABLE}),
    CouponSoldOut: frozenset({ClaimState.SOLD_OUT}),
    CouponNotInWindow: frozenset({ClaimState.NOT_STARTED, ClaimState.ENDED}),
    CouponLimitReached: frozenset({ClaimState.LIMIT_REACHED}),
    CouponPaused: frozenset({ClaimState.PAUSED}),
}


@dataclass(frozen=True)
class CachedTerms:
    """A template's terms as the database showed them, for Redis to refuse on: `version` is
    the row's updated_at in ms (an edit makes it strictly greater), `row` what the claim path
    rebuilds the template from (opaque here)."""

    template_id: int
    incarnation: str  # CouponTemplate.incarnation: the counts are keyed by it
    version: int
    total: int
    per_user_limit: int
    valid_from: datetime
    valid_until: datetime
    row: dict[str, Any]
    paused: bool = False
    # The audience is the user's fact, which only the database knows: Redis refuses such a
    # template on its window and pause only (claim.lua).
    new_customers_only: bool = False


@dataclass(frozen=True)
class StoredCounts:
    """A template's confirmed counts for one user as Redis holds them (None: no key)."""

    claimed: int | None
    user: int | None
