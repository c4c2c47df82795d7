"""Rate limits (SPEC sections 12 and 19), counted in the django-redis cache's Redis.

One fixed window per (scope, identity). A single bucket is a pipelined INCR + EXPIRE, one round
trip; several buckets that must count together or not at all (a login attempt) are one Lua
script (lua/throttle_take.lua), and can be given back (lua/throttle_refund.lua).

When Redis fails, one line is logged and every throttle of the process stays away from Redis for
THROTTLE_REDIS_BACKOFF seconds, so an outage adds no Redis round trip (and no timeout) to the
claim path. What happens meanwhile depends on what the throttle protects: most let requests
through (Redis is advisory here as everywhere in this app), but those that bound guessing
(passwords, coupon codes) count in this process's memory instead, at the same rates, so that an
outage is not an open door (SPEC section 19)."""

import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_redis import get_redis_connection
from rest_framework.throttling import BaseThrottle

from core import clock

logger = logging.getLogger(__name__)

RATE_PATTERN = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")
PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
LUA_DIR = Path(__file__).resolve().parent / "lua"
TAKE_SCRIPT = (LUA_DIR / "throttle_take.lua").read_text()
REFUND_SCRIPT = (LUA_DIR / "throttle_refund.lua").read_text()


@dataclass(frozen=True)
class Rate:
    limit: int
    period: int  # seconds

    @classmethod
    def parse(cls, text: str) -> "Rate":
        """`10/min`, `30/minute`, `100/5m`, `1000/h`, `5/s`, `2/day`."""
        match = RATE_PATTERN.match(text)
        if match is None:
            raise ValueError(f"bad throttle rate {text!r}: use e.g. 10/min, 100/h, 5/30s")
        count, multiple, unit = match.groups()
        return cls(limit=int(count), period=int(multiple or 1) * PERIOD_SECONDS[unit[0]])


@dataclass(frozen=True)
class Bucket:
    """Whom a scope counts: one user, one address, one (username, address) pair..."""

    scope: str
    identity: str


@dataclass(frozen=True)
class Window:
    """A bucket's counter for the fixed window `now` falls in."""

    key: str
    limit: int
    period: int
    ends_at: float

    @classmethod
    def of(cls, bucket: Bucket, *, now: float) -> "Window":
        rate = Rate.parse(settings.THROTTLE_RATES[bucket.scope])
        window = int(now // rate.period)
        key = caches["default"].make_key(f"throttle:{bucket.scope}:{bucket.identity}:{window}")
        ends_at = (window + 1) * rate.period
        return cls(key=key, limit=rate.limit, period=rate.period, ends_at=ends_at)


@dataclass(frozen=True)
class Taken:
    """The outcome of throttle_take: `wait` is None when the request may pass, else the
    seconds until the refusing window ends. `windows` are what was counted (for a refund)."""

    wait: float | None
    windows: tuple[Window, ...] = ()
    in_process: bool = False


class ThrottleBackoff:
    """After a failure of the cache's Redis, skip it until the back-off ends (shared by all
    scopes, and by authentication's user facts: accounts/user_facts.py)."""

    def __init__(self) -> None:
        self._skip_until = 0.0
        self._lock = threading.Lock()

    def skipping(self) -> bool:
        return time.monotonic() < self._skip_until

    def failed(self, error: Exception) -> None:
        backoff = settings.THROTTLE_REDIS_BACKOFF
        with self._lock:
            if self.skipping():  # another thread already reported this outage
                return
            self._skip_until = time.monotonic() + backoff
        logger.warning(
            "throttles unavailable for %.1fs: requests pass, except password and code guesses, "
            "which are counted in this process (and users are looked up in the database): %r",
            backoff,
            error,
        )

    def reset(self) -> None:
        self._skip_until = 0.0


backoff = ThrottleBackoff()


class InProcessCounts:
    """Fixed windows in this process's memory: where the throttles that bound guessing count
    while Redis is away. Per process, so N workers allow N times the rate: far from the
    unlimited guessing an outage would otherwise allow. Bounded: past MAX_KEYS counters the
    ended windows are forgotten, then the oldest."""

    MAX_KEYS = 100_000

    def __init__(self) -> None:
        self._counts: dict[str, list[float]] = {}  # key -> [count, window end]
        self._lock = threading.Lock()

    def take(self, windows: tuple[Window, ...], *, now: float) -> int:
        """As throttle_take.lua: 0 when every window was under its limit (each counted), else
        the 1-based index of the first at its limit (nothing counted)."""
        with self._lock:
            self._make_room(now)
            for index, window in enumerate(windows, start=1):
                if self._counts.get(window.key, (0, 0))[0] >= window.limit:
                    return index
            for window in windows:
                self._counts.setdefault(window.key, [0, window.ends_at])[0] += 1
            return 0

    def refund(self, windows: tuple[Window, ...]) -> None:
        with self._lock:
            for window in windows:
                entry = self._counts.get(window.key)
                if entry is not None and entry[0] > 0:
                    entry[0] -= 1

    def _make_room(self, now: float) -> None:
        if len(self._counts) < self.MAX_KEYS:
            return
        self._counts = {key: entry for key, entry in self._counts.items() if entry[1] > now}
        while len(self._counts) >= self.MAX_KEYS:
            del self._counts[next(iter(self._counts))]

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()


in_process_counts = InProcessCounts()


def throttle_hit(
    *, scope: str, identity: str, now: float | None = None, bounds_guessing: bool = False
) -> float | None:
    """Count one request of `identity` in `scope`. Returns None when it may pass, else the
    seconds until its window ends. Redis down or slow: None (fail open), or with
    `bounds_guessing` the count in this process."""
    now = clock.now().timestamp() if now is None else now
    window = Window.of(Bucket(scope, identity), now=now)
    if not backoff.skipping():
        try:
            pipe = get_redis_connection("default").pipeline(transaction=False)
            pipe.incr(window.key)
            pipe.expire(window.key, window.period)
            count, _ = pipe.execute()
        except redis.RedisError as error:
            backoff.failed(error)
        else:
            return None if count <= window.limit else window.ends_at - now
    if not bounds_guessing:
        return None
    refused = in_process_counts.take((window,), now=now)
    return None if refused == 0 else window.ends_at - now


def throttle_take(
    buckets: list[Bucket], *, now: float | None = None, bounds_guessing: bool = False
) -> Taken:
    """Count one request in every bucket, or, when one of them is at its limit, in none.
    Redis down or slow: pass without counting, or with `bounds_guessing` count in this
    process."""
    now = clock.now().timestamp() if now is None else now
    windows = tuple(Window.of(bucket, now=now) for bucket in buckets)
    if not backoff.skipping():
        try:
            script = get_redis_connection("default").register_script(TAKE_SCRIPT)
            refused = int(
                script(
                    keys=[w.key for w in windows],
                    args=[w.limit for w in windows] + [w.period for w in windows],
                )
            )
        except redis.RedisError as error:
            backoff.failed(error)
        else:
            return taken_outcome(refused, windows, now=now, in_process=False)
    if not bounds_guessing:
        return Taken(wait=None)
    refused = in_process_counts.take(windows, now=now)
    return taken_outcome(refused, windows, now=now, in_process=True)


def taken_outcome(refused: int, windows: tuple[Window, ...], *, now: float, in_process: bool):
    if refused == 0:
        return Taken(wait=None, windows=windows, in_process=in_process)
    return Taken(wait=windows[refused - 1].ends_at - now)


def throttle_refund(taken: Taken) -> None:
    """Give back what throttle_take counted (best effort: a refund Redis misses is a count
    that runs out with its window)."""
    if not taken.windows:
        return
    if taken.in_process:
        in_process_counts.refund(taken.windows)
        return
    try:
        script = get_redis_connection("default").register_script(REFUND_SCRIPT)
        script(keys=[w.key for w in taken.windows])
    except redis.RedisError as error:
        backoff.failed(error)


def client_ip(request: HttpRequest) -> str:
    """The socket's address (REMOTE_ADDR); with NUM_PROXIES trusted proxies in front (1 behind
    the shipped nginx), the address the nearest of them saw, taken from the end of
    X-Forwarded-For: DRF's own rule. The header counts only from a peer in TRUSTED_PROXIES
    (ops.middleware drops it from anyone else), and only with NUM_PROXIES set."""
    # get_ident reads only request.META, which a plain HttpRequest has too.
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]


class ScopedThrottle(BaseThrottle):
    """A DRF throttle over throttle_hit; subclasses say the scope and whom they count."""

    scope: str
    bounds_guessing = False  # True: counted in this process while Redis is away

    def identity(self, request, view) -> str | None:
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        identity = self.identity(request, view)
        if identity is None:
            return True
        self._wait = throttle_hit(
            scope=self.scope, identity=identity, bounds_guessing=self.bounds_guessing
        )
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class UserThrottle(ScopedThrottle):
    def identity(self, request, view) -> str | None:
        return str(request.user.pk) if request.user.is_authenticated else None


class CheckoutThrottle(UserThrottle):
    """For POST /api/orders: with MAX_UNPAID_ORDERS, no hoarding of stock (SPEC section 19)."""

    scope = "checkout"


class RedeemThrottle(UserThrottle):
    """For POST /api/coupons/redeem (code redemption, SPEC section 11)."""

    scope = "redeem"
    bounds_guessing = True  # unknown codes count: this is what keeps hidden codes hidden


class RedeemIPThrottle(ScopedThrottle):
    """Redemptions per client address: several accounts on one address share one budget of
    code guesses (SPEC section 19)."""

    scope = "redeem_ip"
    bounds_guessing = True

    def identity(self, request, view) -> str | None:
        return client_ip(request)
