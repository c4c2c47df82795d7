"""CouponCounter: the advisory Redis counters of SPEC section 3. Redis only, no ORM.

Redis never decides a claim: every error is logged and swallowed, and after one the counter
stays away from Redis for a short back-off so an outage costs requests nothing.

The counter is given its Redis client (a `redis.Redis` or a `redis.cluster.RedisCluster`);
`counter_from_settings` is the one place that builds it from the settings, and
`coupon_counter()` is the process's instance."""

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import redis
from django.conf import settings
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from coupons.rules import ClaimState

logger = logging.getLogger(__name__)

LUA_DIR = Path(__file__).resolve().parent / "lua"

RedisClient = redis.Redis | RedisCluster
# What a Redis (or Redis Cluster) failure may raise: RedisClusterException is not a RedisError.
REDIS_FAILURES = (redis.RedisError, RedisClusterException)


@dataclass(frozen=True)
class CouponClaimed:
    pass


@dataclass(frozen=True)
class CouponSoldOut:
    pass


@dataclass(frozen=True)
class CouponNotInWindow:
    pass


@dataclass(frozen=True)
class CouponLimitReached:
    pass


CounterResult = CouponClaimed | CouponSoldOut | CouponNotInWindow | CouponLimitReached
# claim.lua's return codes, and the states of the claim rule each one stands for
# (tests/coupons/test_rules.py runs the script against coupons.rules.claim_state).
RESULT_BY_CODE: dict[int, CounterResult] = {
    0: CouponClaimed(),
    1: CouponSoldOut(),
    2: CouponNotInWindow(),
    3: CouponLimitReached(),
}
STATES_BY_RESULT: dict[CounterResult, frozenset[ClaimState]] = {
    CouponClaimed(): frozenset({ClaimState.CLAIMABLE}),
    CouponSoldOut(): frozenset({ClaimState.SOLD_OUT}),
    CouponNotInWindow(): frozenset({ClaimState.NOT_STARTED, ClaimState.ENDED}),
    CouponLimitReached(): frozenset({ClaimState.LIMIT_REACHED}),
}

# Per-user keys live until the claim window ends plus this margin (for app clocks a little
# apart); after that a claim is refused by the window anyway, so nothing needs them.
PER_USER_KEYS_OUTLIVE_WINDOW_MS = 60_000


@dataclass(frozen=True)
class ClaimTerms:
    """What the claim script needs to know about a template, read from the database."""

    template_id: int
    total: int
    per_user_limit: int
    valid_from: datetime
    valid_until: datetime


@dataclass(frozen=True)
class StoredCounts:
    """A template's counters for one user as Redis holds them (None: no key)."""

    claimed: int | None
    user: int | None
    version: int | None
    user_version: int | None


def hash_tag(template_id: int) -> str:
    """`{T}`: Redis Cluster hashes only this part, so one template's keys share a slot."""
    return f"{{{template_id}}}"


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def per_user_ttl_ms(*, now: datetime, valid_until: datetime) -> int:
    """How long the per-user keys should live from `now`: to the window's end, plus margin."""
    return max(epoch_ms(valid_until) - epoch_ms(now), 0) + PER_USER_KEYS_OUTLIVE_WINDOW_MS


class CouponCounter:
    def __init__(self, client: RedisClient, *, prefix: str = "", backoff: float = 5.0):
        """`client` should time out within the claim budget (SPEC section 3: 250 ms), since
        every call here is made on a request's path."""
        self.client = client
        self.prefix = prefix
        self.backoff = backoff
        # register_script loads each script once and reloads it by itself after a
        # SCRIPT FLUSH or a Redis restart (NOSCRIPT -> SCRIPT LOAD).
        self._claim_script = client.register_script((LUA_DIR / "claim.lua").read_text())
        self._sync_script = client.register_script((LUA_DIR / "sync.lua").read_text())
        self._skip_until = 0.0

    # Key naming: the template id in literal braces is the Redis Cluster hash tag, so all four
    # keys of one template live in one slot, as a Lua script requires.

    def keys(self, template_id: int, user_id: int) -> list[str]:
        tag = hash_tag(template_id)
        return [
            f"{self.prefix}coupon:claimed:{tag}",
            f"{self.prefix}coupon:peruser:{tag}:{user_id}",
            f"{self.prefix}coupon:version:{tag}",
            f"{self.prefix}coupon:peruser-version:{tag}:{user_id}",
        ]

    def claim(
        self, terms: ClaimTerms, *, user_id: int, now: datetime, db_claimed: int, db_user: int
    ) -> CounterResult | None:
        """Count a claim attempt; None when Redis is unavailable. Never raises."""
        args = [
            epoch_ms(now),
            terms.total,
            epoch_ms(terms.valid_from),
            epoch_ms(terms.valid_until),
            terms.per_user_limit,
            db_claimed,
            db_user,
            per_user_ttl_ms(now=now, valid_until=terms.valid_until),
        ]
        code = self._run(self._claim_script, self.keys(terms.template_id, user_id), args)
        return None if code is None else RESULT_BY_CODE[int(code)]

    def sync(
        self,
        *,
        template_id: int,
        user_id: int,
        db_claimed: int,
        db_user: int,
        now: datetime,
        valid_until: datetime,
    ) -> bool:
        """SyncCouponCounts: overwrite both counters with database facts where not older.
        Returns whether Redis answered. Never raises."""
        args = [db_claimed, db_user, per_user_ttl_ms(now=now, valid_until=valid_until)]
        return self._run(self._sync_script, self.keys(template_id, user_id), args) is not None

    def stored(self, *, template_id: int, user_id: int) -> StoredCounts:
        """What Redis holds for the template and user (for operators and tests). Raises
        when Redis fails, unlike claim and sync."""
        values = self.client.mget(self.keys(template_id, user_id))
        claimed, user, version, user_version = (None if v is None else int(v) for v in values)
        return StoredCounts(claimed=claimed, user=user, version=version, user_version=user_version)

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except REDIS_FAILURES:
            return False

    def rebuild_template(self, *, template_id: int, db_claimed: int) -> None:
        """Set the total counter and its version to the database count and drop every
        per-user key of the template (each is rebuilt from its floor by the next claim).
        For the rebuild command: raises when Redis fails, unlike claim and sync."""
        claimed_key, _, version_key, _ = self.keys(template_id, 0)
        tag = hash_tag(template_id)
        for pattern in (
            f"{self.prefix}coupon:peruser:{tag}:*",
            f"{self.prefix}coupon:peruser-version:{tag}:*",
        ):
            batch = []
            for key in self.client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) == 1000:
                    self.client.delete(*batch)
                    batch = []
            if batch:
                self.client.delete(*batch)
        self.client.mset({claimed_key: db_claimed, version_key: db_claimed})

    def _run(self, script, keys: list[str], args: list[int]):
        if time.monotonic() < self._skip_until:
            return None
        try:
            return script(keys=keys, args=args)
        except REDIS_FAILURES as error:
            self._skip_until = time.monotonic() + self.backoff
            logger.warning(
                "coupon counter unavailable, skipping Redis for %.1fs: %r", self.backoff, error
            )
            return None


def redis_client(url: str, *, cluster: bool, timeout: float) -> RedisClient:
    """A client that fails fast: connecting is quick when Redis is up. With `cluster`, `url`
    names any one node; the client discovers the others."""
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def counter_from_settings() -> CouponCounter:
    """The one place the counter's connection comes from: COUPON_COUNTER_REDIS_URL,
    COUPON_REDIS_CLUSTER, COUPON_REDIS_PREFIX, COUPON_COUNTER_CLAIM_TIMEOUT and
    COUPON_COUNTER_BACKOFF."""
    client = redis_client(
        settings.COUPON_COUNTER_REDIS_URL,
        cluster=settings.COUPON_REDIS_CLUSTER,
        timeout=settings.COUPON_COUNTER_CLAIM_TIMEOUT,
    )
    return CouponCounter(
        client, prefix=settings.COUPON_REDIS_PREFIX, backoff=settings.COUPON_COUNTER_BACKOFF
    )


class UnavailableCounter:
    """Stands in for the counter while its Redis could not even be connected to (a Redis
    Cluster client asks the cluster for its slots when it is built): counts nothing, like a
    counter in back-off."""

    def claim(self, terms: ClaimTerms, **facts) -> None:
        return None

    def sync(self, **facts) -> bool:
        return False

    def ping(self) -> bool:
        return False

    def stored(self, **key) -> StoredCounts:
        raise redis.ConnectionError("the coupon counter's Redis is unavailable")

    def rebuild_template(self, **facts) -> None:
        raise redis.ConnectionError("the coupon counter's Redis is unavailable")


AnyCounter = CouponCounter | UnavailableCounter
_counter: CouponCounter | None = None
_unavailable_until = 0.0


def coupon_counter() -> AnyCounter:
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
