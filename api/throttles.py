"""Rate limits (SPEC section 12), counted in the django-redis cache's Redis.

One fixed window per (scope, identity): a pipelined INCR + EXPIRE, one round trip. Redis is
advisory here as everywhere in this app: when it fails the request goes through, one line is
logged, and every throttle of the process stays away from Redis for THROTTLE_REDIS_BACKOFF
seconds, so an outage adds no Redis round trip (and no timeout) to the claim path."""

import hashlib
import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass

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


class ThrottleBackoff:
    """After a Redis failure, skip Redis until the back-off ends (shared by all scopes)."""

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
            "throttles unavailable, letting requests through for %.1fs: %r", backoff, error
        )

    def reset(self) -> None:
        self._skip_until = 0.0


backoff = ThrottleBackoff()


def throttle_hit(*, scope: str, identity: str, now: float | None = None) -> float | None:
    """Count one request of `identity` in `scope`. Returns None when it may pass, else the
    seconds until its window ends. Redis down or slow: None (fail open)."""
    rate = Rate.parse(settings.THROTTLE_RATES[scope])
    if backoff.skipping():
        return None
    now = clock.now().timestamp() if now is None else now
    window = int(now // rate.period)
    key = caches["default"].make_key(f"throttle:{scope}:{identity}:{window}")
    try:
        pipe = get_redis_connection("default").pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, rate.period)
        count, _ = pipe.execute()
    except redis.RedisError as error:
        backoff.failed(error)
        return None
    if count <= rate.limit:
        return None
    return (window + 1) * rate.period - now


def username_key(username: str) -> str:
    """The throttle identity of a username: every spelling that MySQL's utf8mb4_unicode_ci
    column matches to one account counts as one (case, accents, trailing spaces), so a
    guesser cannot multiply the per-username rate by varying them. Hashed: bounded length,
    no odd characters, nothing readable in Redis."""
    decomposed = unicodedata.normalize("NFKD", username)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return hashlib.sha256(folded.rstrip(" ").encode("utf-8", "replace")).hexdigest()[:32]


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or with NUM_PROXIES trusted proxies (nginx) in front, the address they
    saw: DRF's own rule for X-Forwarded-For."""
    return BaseThrottle().get_ident(request)


def login_username(data: object) -> str | None:
    username = data.get("username") if hasattr(data, "get") else None
    return username if isinstance(username, str) and username else None


class ScopedThrottle(BaseThrottle):
    """A DRF throttle over throttle_hit; subclasses say the scope and whom they count."""

    scope: str

    def identity(self, request, view) -> str | None:
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        identity = self.identity(request, view)
        if identity is None:
            return True
        self._wait = throttle_hit(scope=self.scope, identity=identity)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class LoginIPThrottle(ScopedThrottle):
    scope = "login_ip"

    def identity(self, request, view) -> str | None:
        return client_ip(request)


class LoginUsernameThrottle(ScopedThrottle):
    scope = "login_username"

    def identity(self, request, view) -> str | None:
        username = login_username(request.data)
        return username_key(username) if username else None


class UserThrottle(ScopedThrottle):
    def identity(self, request, view) -> str | None:
        return str(request.user.pk) if request.user.is_authenticated else None


class ClaimThrottle(UserThrottle):
    scope = "claim"


class RedeemThrottle(UserThrottle):
    """For POST /api/coupons/redeem (code redemption, SPEC section 11)."""

    scope = "redeem"


LOGIN_THROTTLES = [LoginIPThrottle, LoginUsernameThrottle]


def login_wait(request: HttpRequest, username: str | None) -> float | None:
    """Both login throttles for a login outside DRF (the Django admin); the longest wait."""
    waits = [throttle_hit(scope="login_ip", identity=client_ip(request))]
    if username:
        waits.append(throttle_hit(scope="login_username", identity=username_key(username)))
    waits = [wait for wait in waits if wait is not None]
    return max(waits) if waits else None
