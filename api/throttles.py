"""Rate limits (SPEC sections 12 and 19), counted in the django-redis cache's Redis.

One fixed window per (scope, identity) for a single bucket: a pipelined INCR + EXPIRE, one round
trip. Buckets that must count together or not at all (a login or a sign-up attempt) are one Lua
script (lua/throttle_take.lua) over sliding windows, the attempts of each bucket's last period
(a burst across a minute's edge meets the same ceiling as one inside it: SPEC section 12), and
can be given back (lua/throttle_refund.lua).

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
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import redis
from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_redis import get_redis_connection
from rest_framework.throttling import BaseThrottle

from core import clock
from core.drawn_ids import drawn_hex
from core.redis_scripts import ScriptCall, calls_answered

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
class Span:
    """A bucket's log of the attempts of its last `period` seconds (throttle_take's sliding
    window)."""

    key: str
    limit: int
    period: int

    @classmethod
    def of(cls, bucket: Bucket) -> "Span":
        rate = Rate.parse(settings.THROTTLE_RATES[bucket.scope])
        key = caches["default"].make_key(f"throttle-log:{bucket.scope}:{bucket.identity}")
        return cls(key=key, limit=rate.limit, period=rate.period)


@dataclass(frozen=True)
class Taken:
    """The outcome of throttle_take: `wait` is None when the request may pass, else the
    seconds until the refusing bucket has room again. `spans` are where the attempt was
    counted, as `attempt` (for a refund)."""

    wait: float | None
    spans: tuple[Span, ...] = ()
    attempt: str = ""
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
    """throttle_hit's fixed windows in this process's memory: where the throttles that bound
    guessing count while Redis is away. Per process, so N workers allow N times the rate: far
    from the unlimited guessing an outage would otherwise allow. Bounded: past MAX_KEYS counters the
    ended windows are forgotten, then the oldest."""

    MAX_KEYS = 100_000

    def __init__(self) -> None:
        self._counts: dict[str, list[float]] = {}  # key -> [count, window end]
        self._lock = threading.Lock()

    def take(self, window: Window, *, now: float) -> bool:
        """Count one request in `window` unless it is at its limit; True when counted."""
        with self._lock:
            self._make_room(now)
            entry = self._counts.setdefault(window.key, [0, window.ends_at])
            if entry[0] >= window.limit:
                return False
            entry[0] += 1
            return True

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


class InProcessLogs:
    """throttle_take's sliding windows in this process's memory, while Redis is away (per
    process, as InProcessCounts). Bounded: past MAX_ATTEMPTS attempts held, the logs are
    trimmed to their periods, then the oldest logs are forgotten."""

    MAX_ATTEMPTS = 200_000

    def __init__(self) -> None:
        self._logs: dict[str, deque[tuple[float, str]]] = {}  # key -> (time, attempt), oldest first
        self._held = 0
        self._lock = threading.Lock()

    def take(self, spans: tuple[Span, ...], *, now: float, attempt: str) -> tuple[int, float]:
        """As throttle_take.lua: (0, 0) when every log held fewer than its limit (the attempt
        added to each), else (1-based index of the first at its limit, seconds to wait)."""
        with self._lock:
            for index, span in enumerate(spans, start=1):
                log = self._trimmed(span.key, now - span.period)
                if len(log) >= span.limit:
                    return index, log[len(log) - span.limit][0] + span.period - now
            if self._held + len(spans) > self.MAX_ATTEMPTS:
                self._make_room(now)
            for span in spans:
                self._logs.setdefault(span.key, deque()).append((now, attempt))
                self._held += 1
            return 0, 0.0

    def refund(self, spans: tuple[Span, ...], attempt: str) -> None:
        with self._lock:
            for span in spans:
                log = self._logs.get(span.key, deque())
                kept = deque(entry for entry in log if entry[1] != attempt)
                self._held -= len(log) - len(kept)
                if log:
                    self._logs[span.key] = kept

    def _trimmed(self, key: str, since: float) -> deque[tuple[float, str]]:
        log = self._logs.get(key, deque())
        while log and log[0][0] <= since:
            log.popleft()
            self._held -= 1
        return log

    def _make_room(self, now: float) -> None:
        longest = max(Rate.parse(rate).period for rate in settings.THROTTLE_RATES.values())
        for key in list(self._logs):
            if not self._trimmed(key, now - longest):
                del self._logs[key]
        while self._held > self.MAX_ATTEMPTS // 2 and self._logs:
            self._held -= len(self._logs.pop(next(iter(self._logs))))

    def reset(self) -> None:
        with self._lock:
            self._logs.clear()
            self._held = 0


in_process_logs = InProcessLogs()


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
    counted = in_process_counts.take(window, now=now)
    return None if counted else window.ends_at - now


def throttle_take(
    buckets: list[Bucket], *, now: float | None = None, bounds_guessing: bool = False
) -> Taken:
    """Count one attempt in every bucket's sliding window, or, when one of them is at its
    limit, in none. Redis down or slow: pass without counting, or with `bounds_guessing`
    count in this process."""
    now = clock.now().timestamp() if now is None else now
    spans = tuple(Span.of(bucket) for bucket in buckets)
    attempt = drawn_hex(128)
    if not backoff.skipping():
        try:
            take = ScriptCall(
                TAKE_SCRIPT,
                keys=[span.key for span in spans],
                args=[int(now * 1000), attempt]
                + [span.limit for span in spans]
                + [span.period * 1000 for span in spans],
            )
            [(refused, wait_ms)] = calls_answered(get_redis_connection("default"), [take])
        except redis.RedisError as error:
            backoff.failed(error)
        else:
            return taken_outcome(int(refused), int(wait_ms) / 1000, spans, attempt, False)
    if not bounds_guessing:
        return Taken(wait=None)
    refused, wait = in_process_logs.take(spans, now=now, attempt=attempt)
    return taken_outcome(refused, wait, spans, attempt, True)


def taken_outcome(
    refused: int, wait: float, spans: tuple[Span, ...], attempt: str, in_process: bool
) -> Taken:
    if refused == 0:
        return Taken(wait=None, spans=spans, attempt=attempt, in_process=in_process)
    return Taken(wait=wait)


def throttle_refund(taken: Taken) -> None:
    """Give back what throttle_take counted (best effort: a refund Redis misses is an attempt
    that leaves its window with time)."""
    if not taken.spans:
        return
    if taken.in_process:
        in_process_logs.refund(taken.spans, taken.attempt)
        return
    try:
        refund = ScriptCall(
            REFUND_SCRIPT, keys=[span.key for span in taken.spans], args=[taken.attempt]
        )
        calls_answered(get_redis_connection("default"), [refund])
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
