"""What the coupon counter (coupons/issuing/counter.py) answers and holds: the screen's results, the
terms it caches and the counts it stores. Plain values, no Redis."""

import json
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any

from coupons.rules import ClaimState


class ScreenAnswer(IntEnum):
    """What claim.lua answers, by its code (the reply's first element): the one list from the
    script's codes to the claim's errors. A refusal stands for the claim rule's `states`, and
    is the error coupons.issuing.steps.REJECTION_BY_STATE gives them (tests/coupons/
    test_rules.py runs the script against coupons.rules.claim_state)."""

    states: frozenset[ClaimState]

    def __new__(cls, code: int, states: frozenset[ClaimState]) -> "ScreenAnswer":
        answer = int.__new__(cls, code)
        answer._value_ = code
        answer.states = states
        return answer

    @classmethod
    def of(cls, code: int) -> "ScreenAnswer":
        """The answer claim.lua gave as `code`."""
        return cls._value2member_map_[code]  # type: ignore[return-value]  # by value, as cls(code)

    MAY_HAVE_ROOM = 0, frozenset({ClaimState.CLAIMABLE})
    SOLD_OUT = 1, frozenset({ClaimState.SOLD_OUT})
    NOT_IN_WINDOW = 2, frozenset({ClaimState.NOT_STARTED, ClaimState.ENDED})
    LIMIT_REACHED = 3, frozenset({ClaimState.LIMIT_REACHED})
    THROTTLED = 4, frozenset[ClaimState]()
    TERMS_MISSING = 5, frozenset[ClaimState]()
    PAUSED = 6, frozenset({ClaimState.PAUSED})
    NOT_CLAIMABLE_BY_ID = 7, frozenset[ClaimState]()


REFUSALS = frozenset(
    {
        ScreenAnswer.SOLD_OUT,
        ScreenAnswer.NOT_IN_WINDOW,
        ScreenAnswer.LIMIT_REACHED,
        ScreenAnswer.PAUSED,
    }
)


@dataclass(frozen=True)
class CouponRefused:
    """Redis refused the claim on facts the database confirmed: `answer` (one of REFUSALS)
    says why."""

    answer: ScreenAnswer


@dataclass(frozen=True)
class CouponNotClaimableById:
    """A hidden template, or one reached only by single-use codes: a claim by id is told "not
    found" (as for a missing template), before any refusal that would show it exists."""


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


ScreenResult = (
    CouponRefused
    | CouponNotClaimableById
    | CouponThrottled
    | CouponMayHaveRoom
    | CouponTermsMissing
)


def screen_result_of(reply: list) -> ScreenResult:
    """claim.lua's reply as the screen's answer."""
    answer = ScreenAnswer.of(int(reply[0]))
    if answer is ScreenAnswer.THROTTLED:
        return CouponThrottled()
    if answer is ScreenAnswer.NOT_CLAIMABLE_BY_ID:
        return CouponNotClaimableById()
    if answer in REFUSALS:
        return CouponRefused(answer)
    if answer is ScreenAnswer.MAY_HAVE_ROOM:
        user_claims = None if int(reply[2]) < 0 else int(reply[2])
        return CouponMayHaveRoom(row=json.loads(reply[1]), user_claims=user_claims)
    lease = reply[1]
    return CouponTermsMissing(lease=lease.decode() if isinstance(lease, bytes) else lease)


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
    # Public and not reached only by single-use codes (claim.lua answers "not found" if not).
    claimable_by_id: bool = True


@dataclass(frozen=True)
class StoredCounts:
    """A template's confirmed counts for one user as Redis holds them (None: no key)."""

    claimed: int | None
    user: int | None
