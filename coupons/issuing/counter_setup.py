"""The process's coupon counter: `counter_from_settings` is the one place that builds it from
the settings, `coupon_counter()` is the process's instance, and an UnavailableCounter stands in
while its Redis cannot even be connected to."""

import logging
import time
from datetime import datetime
from typing import Protocol

import redis
from django.conf import settings
from redis.cluster import RedisCluster

from core.metrics import TimedRedisConnection
from core.redis_scripts import ScriptCall
from coupons.issuing.counter import REDIS_FAILURES, CouponCounter, RedisClient
from coupons.issuing.screen_answers import CachedTerms, ScreenResult, StoredCounts

logger = logging.getLogger(__name__)


def redis_client(url: str, *, cluster: bool, timeout: float) -> RedisClient:
    """A client that fails fast: connecting is quick when Redis is up. With `cluster`, `url`
    names any one node; the client discovers the others. A single Redis's round trips are
    timed for /metrics (a cluster client's nodes keep redis-py's own connections)."""
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, connection_class=TimedRedisConnection, **options)


def counter_from_settings() -> CouponCounter:
    """The one place the counter's connection comes from: COUPON_COUNTER_REDIS_URL,
    COUPON_REDIS_CLUSTER, COUPON_REDIS_PREFIX, COUPON_COUNTER_CLAIM_TIMEOUT and
    COUPON_COUNTER_BACKOFF, COUPON_TERMS_LEASE."""
    client = redis_client(
        settings.COUPON_COUNTER_REDIS_URL,
        cluster=settings.COUPON_REDIS_CLUSTER,
        timeout=settings.COUPON_COUNTER_CLAIM_TIMEOUT,
    )
    return CouponCounter(
        client,
        prefix=settings.COUPON_REDIS_PREFIX,
        backoff=settings.COUPON_COUNTER_BACKOFF,
        terms_lease=settings.COUPON_TERMS_LEASE,
        shares_cache_redis=(
            settings.COUPON_COUNTER_REDIS_URL == settings.CACHES["default"]["LOCATION"]
            and not settings.COUPON_REDIS_CLUSTER
        ),
    )


class Counter(Protocol):
    """What the wing asks of a coupon counter: the Redis one (counter.CouponCounter) and the
    stand-in below both implement all of it, with the same signatures. mypy holds both: the
    stand-in subclasses it (a method left out makes it abstract), and `coupon_counter()`
    returns the Redis one as a Counter."""

    terms_lease: float
    shares_cache_redis: bool

    def screen(
        self,
        *,
        template_id: int,
        user_id: int,
        now: datetime,
        throttle_limit: int,
        window: int,
        throttle_period: int,
    ) -> ScreenResult | None: ...

    def screen_with(
        self,
        ride_along: ScriptCall,
        *,
        template_id: int,
        user_id: int,
        now: datetime,
        throttle_limit: int,
        window: int,
        throttle_period: int,
    ) -> tuple[ScreenResult | None, list | None]: ...

    def record(
        self,
        *,
        template_id: int,
        incarnation: str,
        user_id: int,
        db_claimed: int | None,
        db_user: int | None,
        now: datetime,
        valid_until: datetime,
        terms: CachedTerms | None = None,
        lease: str | None = None,
        read_at: float | None = None,
    ) -> bool: ...

    def fence(self, *, template_id: int, version: int) -> bool: ...

    def publish(self, terms: CachedTerms, *, read_at: float) -> bool: ...

    def ping(self) -> bool: ...

    def stored(self, *, template_id: int, incarnation: str, user_id: int) -> StoredCounts: ...

    def rebuild_template(
        self, *, template_id: int, incarnation: str, db_claimed: int, ttl_ms: int
    ) -> None: ...

    def forget_template(self, *, template_id: int) -> None: ...

    def template_ids_held(self) -> set[int]: ...

    def epoch(self) -> int | None: ...

    def epoch_key(self) -> str: ...

    def epoch_raise(self, epoch: int) -> None: ...

    def user_counts_held(self, incarnations: dict[int, str]) -> dict[int, dict[int, int]]: ...

    def lower(self, *, template_id: int, incarnation: str, claimed: int, users: dict) -> int: ...


UNAVAILABLE = "the coupon counter's Redis is unavailable"


class UnavailableCounter(Counter):
    """Stands in for the counter while its Redis could not even be connected to (a Redis
    Cluster client asks the cluster for its slots when it is built): screens and records
    nothing, like a counter in back-off; what must reach Redis (a rebuild, a reconcile's
    reads and writes) raises, as a failing Redis would."""

    def __init__(self) -> None:
        self.terms_lease = settings.COUPON_TERMS_LEASE
        self.shares_cache_redis = False

    def screen(
        self,
        *,
        template_id: int,
        user_id: int,
        now: datetime,
        throttle_limit: int,
        window: int,
        throttle_period: int,
    ) -> ScreenResult | None:
        return None

    def screen_with(
        self,
        ride_along: ScriptCall,
        *,
        template_id: int,
        user_id: int,
        now: datetime,
        throttle_limit: int,
        window: int,
        throttle_period: int,
    ) -> tuple[ScreenResult | None, list | None]:
        return None, None

    def record(
        self,
        *,
        template_id: int,
        incarnation: str,
        user_id: int,
        db_claimed: int | None,
        db_user: int | None,
        now: datetime,
        valid_until: datetime,
        terms: CachedTerms | None = None,
        lease: str | None = None,
        read_at: float | None = None,
    ) -> bool:
        return False

    def fence(self, *, template_id: int, version: int) -> bool:
        return False

    def publish(self, terms: CachedTerms, *, read_at: float) -> bool:
        return False

    def ping(self) -> bool:
        return False

    def stored(self, *, template_id: int, incarnation: str, user_id: int) -> StoredCounts:
        raise redis.ConnectionError(UNAVAILABLE)

    def rebuild_template(
        self, *, template_id: int, incarnation: str, db_claimed: int, ttl_ms: int
    ) -> None:
        raise redis.ConnectionError(UNAVAILABLE)

    def forget_template(self, *, template_id: int) -> None:
        raise redis.ConnectionError(UNAVAILABLE)

    def template_ids_held(self) -> set[int]:
        raise redis.ConnectionError(UNAVAILABLE)

    def epoch(self) -> int | None:
        raise redis.ConnectionError(UNAVAILABLE)

    def epoch_key(self) -> str:
        return ""

    def epoch_raise(self, epoch: int) -> None:
        raise redis.ConnectionError(UNAVAILABLE)

    def user_counts_held(self, incarnations: dict[int, str]) -> dict[int, dict[int, int]]:
        raise redis.ConnectionError(UNAVAILABLE)

    def lower(self, *, template_id: int, incarnation: str, claimed: int, users: dict) -> int:
        raise redis.ConnectionError(UNAVAILABLE)


_counter: CouponCounter | None = None
_unavailable_until = 0.0


def coupon_counter() -> Counter:
    """The process's counter, built from the settings on first use. If it cannot be built
    (a cluster with no node answering), an UnavailableCounter answers until the back-off
    has passed, then building is tried again."""
    global _counter, _unavailable_until
    if _counter is None:
        if time.monotonic() < _unavailable_until:
            return UnavailableCounter()
        try:
            _counter = counter_from_settings()
        except REDIS_FAILURES as error:
            _unavailable_until = time.monotonic() + settings.COUPON_COUNTER_BACKOFF
            logger.warning("coupon counter unavailable, cannot connect: %r", error)
            return UnavailableCounter()
    return _counter


def install_coupon_counter(counter: CouponCounter | None) -> None:
    """Make `counter` the process's counter (None: build it from the settings on next use)."""
    global _counter, _unavailable_until
    _counter, _unavailable_until = counter, 0.0
