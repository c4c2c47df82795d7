"""The claim rule (SPEC sections 4, 5, 14 and 18), written once: window, then paused, then
audience, then total, then the per-user limit.

`claim_state` decides on typed facts in Python (the claim service, the shopper list, the
admin's state column); `TEMPLATE_CHECKS` holds the same template-level checks, each beside
its SQL form, for the admin's state filter. `tests/coupons/test_rules.py` holds the SQL forms
and the Lua claim script's return codes to `claim_state`."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db.models import F, Q


class ClaimState(StrEnum):
    """What a claim would meet, in the order the rule checks it. The values are the API's
    `state` names; ACTIVE is the template-level view (no user) of CLAIMABLE."""

    NOT_STARTED = "not_started"
    ENDED = "ended"
    PAUSED = "paused"
    NOT_ELIGIBLE = "not_eligible"
    SOLD_OUT = "sold_out"
    LIMIT_REACHED = "limit_reached"
    CLAIMABLE = "claimable"
    ACTIVE = "active"


@dataclass(frozen=True)
class TemplateFacts:
    """A template's claim terms and count as the database holds them."""

    total: int
    claimed_count: int
    per_user_limit: int
    valid_from: datetime
    valid_until: datetime
    paused: bool = False
    new_customers_only: bool = False  # audience `new_customers`: users with no paid order


@dataclass(frozen=True)
class TemplateCheck:
    """One step of the rule: the state it answers, its test in Python and in SQL."""

    state: ClaimState
    holds: Callable[[TemplateFacts, datetime], bool]
    where: Callable[[datetime], Q]


# The template-level steps, in order. Both ends of the window are inclusive.
TEMPLATE_CHECKS: tuple[TemplateCheck, ...] = (
    TemplateCheck(
        ClaimState.NOT_STARTED,
        lambda facts, now: now < facts.valid_from,
        lambda now: Q(valid_from__gt=now),
    ),
    TemplateCheck(
        ClaimState.ENDED,
        lambda facts, now: now > facts.valid_until,
        lambda now: Q(valid_until__lt=now),
    ),
    TemplateCheck(
        ClaimState.PAUSED,
        lambda facts, now: facts.paused,
        lambda now: Q(paused_at__isnull=False),
    ),
    TemplateCheck(
        ClaimState.SOLD_OUT,
        lambda facts, now: facts.claimed_count >= facts.total,
        lambda now: Q(claimed_count__gte=F("total")),
    ),
)


def claim_state(
    facts: TemplateFacts,
    *,
    now: datetime,
    user_claims: int | None,
    has_paid_order: bool | None = None,
    before_window_opens: bool = False,
) -> ClaimState:
    """The one claim rule: window, paused, audience, total, then the user's limit
    (`user_claims` None: the template-level view, ACTIVE instead of checking a user, and no
    audience). `has_paid_order` is the user's fact for a new-customers template (None: not
    looked up, only allowed where the audience does not ask). `before_window_opens` lets an
    issue before valid_from through (staff grants, SPEC section 11); the end still holds."""
    for check in TEMPLATE_CHECKS:
        if check.state is ClaimState.NOT_STARTED and before_window_opens:
            continue
        if check.state is ClaimState.SOLD_OUT and user_claims is not None:
            # The audience is the caller's step, between the template's pause and its total.
            if facts.new_customers_only and _has_paid_order(has_paid_order):
                return ClaimState.NOT_ELIGIBLE
        if check.holds(facts, now):
            return check.state
    if user_claims is None:
        return ClaimState.ACTIVE
    if user_claims >= facts.per_user_limit:
        return ClaimState.LIMIT_REACHED
    return ClaimState.CLAIMABLE


def _has_paid_order(has_paid_order: bool | None) -> bool:
    if has_paid_order is None:
        raise ValueError("a new-customers template needs the user's has_paid_order fact")
    return has_paid_order


def template_state_where(state: ClaimState, *, now: datetime) -> Q:
    """The template-level `state` as a filter: its own check and none of the earlier ones,
    so a queryset filter answers exactly what `claim_state(..., user_claims=None)` would."""
    where = Q()
    for check in TEMPLATE_CHECKS:
        if check.state is state:
            return where & check.where(now)
        where &= ~check.where(now)
    if state is ClaimState.ACTIVE:
        return where
    raise ValueError(f"{state} is not a template-level state")
