"""Issuing coupons one at a time (SPEC sections 4, 14 and 15): the claim's Redis screen, and
the issuing core every claim, code and event coupon goes through, deciding in one short
transaction (coupons/issuing/transaction.py). A staff grant issues in batches of its own
(coupons/services/grants.py) under the same rule, coupons.rules.claim_state."""

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from django.conf import settings
from django.utils.translation import gettext as _

from accounts.authentication import TokenBearer, token_check_in_database
from api.idempotency import EffectRecord
from api.throttles import Rate
from core import clock
from core.domain_errors import DomainError
from core.metrics import claim_screen_answers_total, claims_total
from core.redis_scripts import ScriptCall
from coupons.errors import (
    ClaimThrottled,
    CodeUsed,
    TemplateNotFound,
)
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.decision import DecisionContext, GrantNote
from coupons.issuing.screen_answers import (
    CouponMayHaveRoom,
    CouponNotClaimableById,
    CouponRefused,
    CouponTermsMissing,
    CouponThrottled,
    ScreenAnswer,
    ScreenResult,
)
from coupons.issuing.steps import issue_after_screen, rejection_of
from coupons.issuing.transaction import decided_in_the_server
from coupons.models import (
    CouponTemplate,
    UserCoupon,
)
from coupons.models.single_use_codes import (
    SingleUseCode,
)


class ScreenAsked(TypedDict):
    """What the counter's screen is asked."""

    template_id: int
    user_id: int
    now: datetime
    throttle_limit: int
    window: int
    throttle_period: int


@dataclass(frozen=True)
class ClaimScreen:
    """The claim's Redis screen, asked: its answer (None: Redis unavailable), for a throttled
    claim the seconds to the end of the throttle's window, and whether a call rode along
    (`claim_screen`) with its reply (None: Redis unavailable)."""

    result: ScreenResult | None
    retry_after: float
    along_sent: bool = False
    along_reply: list | None = None

    @property
    def may_have_room(self) -> bool:
        """Whether the screen sends the claim on to the database (it refused nothing)."""
        return isinstance(self.result, CouponMayHaveRoom)


def claim_screen(
    *, template_id: int, user_id: int, ride_along: ScriptCall | None = None
) -> ClaimScreen:
    """Ask the claim's screen (one Redis round trip): the claim counted against the claim
    rate and refused on facts the database confirmed. With `ride_along`, a script call to the
    cache's Redis, sent in the same round trip when the counter's Redis is that one."""
    counter = coupon_counter()
    now = clock.now()
    rate = Rate.parse(settings.THROTTLE_RATES["claim"])
    now_seconds = now.timestamp()
    window = int(now_seconds // rate.period)
    asked = ScreenAsked(
        template_id=template_id,
        user_id=user_id,
        now=now,
        throttle_limit=rate.limit,
        window=window,
        throttle_period=rate.period,
    )
    retry_after = (window + 1) * rate.period - now_seconds
    if ride_along is not None and counter.shares_cache_redis:
        result, along = counter.screen_with(ride_along, **asked)
        return ClaimScreen(result, retry_after, along_sent=True, along_reply=along)
    return ClaimScreen(counter.screen(**asked), retry_after)


def coupon_claim(
    *,
    template_id: int,
    user_id: int,
    bearer: TokenBearer | None = None,
    effect_record: EffectRecord | None = None,
) -> UserCoupon:
    """A shopper claims one coupon of a public template by its id (SPEC sections 4 and 15),
    in this order:

    1. The screen, one Redis round trip: the claim counted against the claim rate and
       refused on facts the database confirmed. A `bearer` (a token whose user is not checked
       yet) has its user's facts read in the same round trip.
    2. The bearer's check (401 unless its token is honoured): on those facts; for a user
       Redis does not hold, left to the decision's call when the claim goes on to it (decision
       1016), else read now.
    3. A refusal (ClaimThrottled, a hidden template's TemplateNotFound, the screen's), with no
       database statement; or the database decides as in `coupon_issue`, writing the coupon's
       id into `effect_record` (the request's Idempotency-Key) in the same transaction.

    A refusal is told only to a token whose user honours it. Runs its own transactions.
    Counted for /metrics by outcome."""
    screened = claim_screen(
        template_id=template_id,
        user_id=user_id,
        ride_along=None if bearer is None else bearer.facts_read(),
    )
    token_check = None
    if bearer is not None:
        token_check = bearer.check(
            screened.along_reply,
            asked=screened.along_sent,
            the_write_may_check=screened.may_have_room and decided_in_the_server(),
        )
    claim_screen_answers_total.labels(screen_answer_name(screened.result)).inc()
    decided_by = "redis"
    try:
        if isinstance(screened.result, CouponThrottled):
            raise ClaimThrottled(retry_after=screened.retry_after)
        if isinstance(screened.result, CouponNotClaimableById):
            raise TemplateNotFound()  # a hidden template is not found, even when it has ended
        if isinstance(screened.result, CouponRefused):
            raise rejection_of(screened.result)()
        decided_by = "database"
        coupon = issue_after_screen(
            template_id=template_id,
            user_id=user_id,
            source=UserCoupon.Source.CLAIM,
            counter=coupon_counter(),
            screened=screened.result,
            context=DecisionContext(token_check=token_check, effect_record=effect_record),
        )
    except DomainError as refusal:
        claims_total.labels(refusal.code, decided_by).inc()
        if token_check is not None:  # the decision did not read the user: read it now
            token_check_in_database(token_check)
        raise
    claims_total.labels("won", decided_by).inc()
    return coupon


def screen_answer_name(screened: ScreenResult | None) -> str:
    """The screen's answer as /metrics names it (None: Redis was not asked or did not answer)."""
    if isinstance(screened, CouponRefused):
        return screened.answer.name.lower()
    if screened is None:
        return "unavailable"
    return SCREEN_ANSWER_OF[type(screened)].name.lower()


SCREEN_ANSWER_OF: dict[type, ScreenAnswer] = {
    CouponNotClaimableById: ScreenAnswer.NOT_CLAIMABLE_BY_ID,
    CouponThrottled: ScreenAnswer.THROTTLED,
    CouponMayHaveRoom: ScreenAnswer.MAY_HAVE_ROOM,
    CouponTermsMissing: ScreenAnswer.TERMS_MISSING,
}


def coupon_redeem(
    *, code: str, user_id: int, effect_record: EffectRecord | None = None
) -> UserCoupon:
    """A shopper claims the template that has this code, public or hidden, through the same
    issuing core as a claim (SPEC section 11). Codes compare without regard to case; an
    unknown code is TemplateNotFound. A single-use code (SPEC section 18) issues its template
    once: to the first redemption that the rule lets through; after it, CodeUsed. Runs its
    own transactions (see `coupon_issue`); the coupon's id commits into `effect_record`."""
    context = DecisionContext(effect_record=effect_record)
    single_use = (
        SingleUseCode.objects.filter(code=code.upper())
        .values_list("pk", "template_id", "used_at")
        .first()
    )
    if single_use is not None:
        code_id, template_id, used_at = single_use
        if used_at is not None:  # safe without a lock: a used code is never freed
            raise CodeUsed()
        return issue_after_screen(
            template_id=template_id,
            user_id=user_id,
            source=UserCoupon.Source.CODE,
            single_use_code_id=code_id,
            counter=coupon_counter(),
            screened=None,
            context=context,
        )
    shared = (
        CouponTemplate.objects.filter(code_key=code.upper()).values_list("pk", flat=True).first()
    )
    if shared is None:
        raise TemplateNotFound(_("No coupon has this code."))
    return issue_after_screen(
        template_id=shared,
        user_id=user_id,
        source=UserCoupon.Source.CODE,
        counter=coupon_counter(),
        screened=None,
        context=context,
    )


def coupon_issue(
    *,
    template_id: int,
    user_id: int,
    source: str,
    before_window_opens: bool = False,
    grant: GrantNote | None = None,
    single_use_code_id: int | None = None,
) -> UserCoupon:
    """Issue one coupon of a template to a user, or raise why not. The issuing core: every path
    that hands out one coupon (claim by id, code, a coupon an event earned) comes through here,
    and the coupon records its `source`, its own use window (stamped here, under the row lock)
    and, for an event's coupon, the GrantNote. Staff grants go in batches
    (coupons/services/grants.py).

    Raises TemplateNotFound (also for a claim by id of a hidden template, and for a claim by id
    or shared code of a template with single-use codes), AlreadyGranted, CodeUsed (the
    `single_use_code_id` was taken first: it is spent in the decision transaction, at most
    once), or a ClaimRejected (ClaimNotInWindow, ClaimPaused, ClaimNotEligible, ClaimSoldOut,
    ClaimLimitReached) decided by `coupons.rules.claim_state` in the order window, paused,
    audience, total, per-user limit; `before_window_opens` skips only the window's start
    (grants may be made early, never after the end). A DatabaseError is re-raised with
    nothing written, after the Redis counters are put back to the database facts.

    Runs its own short transactions and Redis calls, so call it outside any transaction: inside
    one, the template's row lock would be held until the caller commits. The database decides
    (never over `total`, never over `per_user_limit`, no false sold-out, the window checked
    with `now` sampled after the row lock); Redis only learns what the database showed."""
    return issue_after_screen(
        template_id=template_id,
        user_id=user_id,
        source=source,
        before_window_opens=before_window_opens,
        grant=grant,
        single_use_code_id=single_use_code_id,
        counter=coupon_counter(),
        screened=None,
    )
