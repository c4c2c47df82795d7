"""CouponCounter: the advisory Redis counters of SPEC section 3. Redis only, no ORM.

Redis never decides a claim: every error is logged and swallowed, and after one the counter
stays away from Redis for a short back-off so an outage costs requests nothing.

The counter is given its Redis client (a `redis.Redis` or a `redis.cluster.RedisCluster`);
`counter_from_settings` is the one place that builds it from the settings, and
`coupon_counter()` is the process's instance."""

import json
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

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
    user_claims: int | None


Refusal = CouponSoldOut | CouponNotInWindow | CouponLimitReached | CouponPaused
ScreenResult = Refusal | CouponThrottled | CouponMayHaveRoom | CouponTermsMissing
# claim.lua's refusal codes, and the states of the claim rule each one stands for
# (tests/coupons/test_rules.py runs the script against coupons.rules.claim_state).
REFUSAL_BY_CODE: dict[int, Refusal] = {
    1: CouponSoldOut(),
    2: CouponNotInWindow(),
    3: CouponLimitReached(),
    6: CouponPaused(),
}
STATES_BY_RESULT: dict[type, frozenset[ClaimState]] = {
    CouponMayHaveRoom: frozenset({ClaimState.CLAIMABLE}),
    CouponSoldOut: frozenset({ClaimState.SOLD_OUT}),
    CouponNotInWindow: frozenset({ClaimState.NOT_STARTED, ClaimState.ENDED}),
    CouponLimitReached: frozenset({ClaimState.LIMIT_REACHED}),
    CouponPaused: frozenset({ClaimState.PAUSED}),
}
THROTTLED, MAY_HAVE_ROOM, TERMS_MISSING = 4, 0, 5

# Per-user keys live until the claim window ends plus this margin (for app clocks a little
# apart); after that a claim is refused by the window anyway, so nothing needs them.
PER_USER_KEYS_OUTLIVE_WINDOW_MS = 60_000
# A fence must outlive every claim that may still write back the terms it fences out: such a
# write lands at most a lease after the claim's read, and then expires on arrival anyway. A
# fence a failed change left behind only keeps the terms out of Redis this long.
FENCE_TTL_MS = 60_000


@dataclass(frozen=True)
class CachedTerms:
    """A template's terms as the database showed them, for Redis to refuse on: `version` is
    the row's updated_at in ms (an edit makes it strictly greater), `row` what the claim path
    rebuilds the template from (opaque here)."""

    template_id: int
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


def hash_tag(template_id: int) -> str:
    """`{T}`: Redis Cluster hashes only this part, so one template's keys share a slot."""
    return f"{{{template_id}}}"


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def per_user_ttl_ms(*, now: datetime, valid_until: datetime) -> int:
    """How long the per-user keys should live from `now`: to the window's end, plus margin."""
    return max(epoch_ms(valid_until) - epoch_ms(now), 0) + PER_USER_KEYS_OUTLIVE_WINDOW_MS


class CouponCounter:
    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = "",
        backoff: float = 5.0,
        terms_lease: float = 5.0,
    ):
        """`client` should time out within the claim budget (SPEC section 3: 250 ms), since
        every call here is made on a request's path. Cached terms live `terms_lease` seconds
        from the database read they came from (see `terms_expire_at`)."""
        self.client = client
        self.prefix = prefix
        self.backoff = backoff
        self.terms_lease = terms_lease
        # register_script loads each script once and reloads it by itself after a
        # SCRIPT FLUSH or a Redis restart (NOSCRIPT -> SCRIPT LOAD).
        self._claim_script = client.register_script((LUA_DIR / "claim.lua").read_text())
        self._sync_script = client.register_script((LUA_DIR / "sync.lua").read_text())
        self._terms_script = client.register_script((LUA_DIR / "terms.lua").read_text())
        self._skip_until = 0.0

    # Key naming: the template id in literal braces is the Redis Cluster hash tag, so every
    # key of one template (the throttle's too) lives in one slot, as a Lua script requires.

    def keys(self, template_id: int, user_id: int) -> list[str]:
        """claimed, peruser, terms, terms-lease, terms-fence."""
        tag = hash_tag(template_id)
        return [
            f"{self.prefix}coupon:claimed:{tag}",
            f"{self.prefix}coupon:peruser:{tag}:{user_id}",
            f"{self.prefix}coupon:terms:{tag}",
            f"{self.prefix}coupon:terms-lease:{tag}",
            f"{self.prefix}coupon:terms-fence:{tag}",
        ]

    def throttle_key(self, template_id: int, user_id: int, window: int) -> str:
        return f"{self.prefix}coupon:throttle:{hash_tag(template_id)}:{user_id}:{window}"

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
        """Count the claim against the throttle and refuse it if the confirmed facts say so,
        in one round trip. None when Redis is unavailable. Never raises."""
        claimed, peruser, terms, lease, _ = self.keys(template_id, user_id)
        keys = [terms, lease, claimed, peruser, self.throttle_key(template_id, user_id, window)]
        args = [
            epoch_ms(now),
            throttle_limit,
            throttle_period,
            secrets.token_hex(8),
            int(self.terms_lease * 1000),
        ]
        reply = self._run(self._claim_script, keys, args)
        if reply is None:
            return None
        code = int(reply[0])
        if code == THROTTLED:
            return CouponThrottled()
        if code in REFUSAL_BY_CODE:
            return REFUSAL_BY_CODE[code]
        user_claims = None if int(reply[2]) < 0 else int(reply[2])
        if code == MAY_HAVE_ROOM:
            return CouponMayHaveRoom(row=json.loads(reply[1]), user_claims=user_claims)
        return CouponTermsMissing(lease=_text(reply[1]), user_claims=user_claims)

    def record(
        self,
        *,
        template_id: int,
        user_id: int,
        db_claimed: int | None,
        db_user: int | None,
        now: datetime,
        valid_until: datetime,
        terms: CachedTerms | None = None,
        lease: str | None = None,
        read_at: float | None = None,
    ) -> bool:
        """Record what the database showed (counts as floors) and, with the lease handed out
        by `screen`, the terms read at `read_at` (time.time() before the read). Returns whether
        Redis answered. Never raises."""
        claimed, peruser, terms_key, lease_key, fence = self.keys(template_id, user_id)
        args: list = [
            -1 if db_claimed is None else db_claimed,
            -1 if db_user is None else db_user,
            per_user_ttl_ms(now=now, valid_until=valid_until),
        ]
        if terms is not None and lease is not None and read_at is not None:
            args += [lease, *self._terms_args(terms, read_at=read_at)]
        else:
            args += [""]
        keys = [claimed, peruser, terms_key, lease_key, fence]
        return self._run(self._sync_script, keys, args) is not None

    def fence(self, *, template_id: int, version: int) -> bool:
        """Before a staff change commits: drop the cached terms and raise the fence to
        `version`, so no terms older than that are written again. Returns whether Redis
        confirmed it. Never raises."""
        return self._change_terms(template_id, version, [])

    def publish(self, terms: CachedTerms, *, read_at: float) -> bool:
        """After a staff change commits (or a publish): fence at the new version and cache the
        new terms, read at `read_at`. Returns whether Redis confirmed it. Never raises."""
        return self._change_terms(
            terms.template_id, terms.version, self._terms_args(terms, read_at=read_at)
        )

    def _change_terms(self, template_id: int, fence: int, terms: list) -> bool:
        _, _, terms_key, lease, fence_key = self.keys(template_id, 0)
        ttl = max(FENCE_TTL_MS, int(self.terms_lease * 4000))
        reply = self._run(self._terms_script, [terms_key, lease, fence_key], [fence, ttl, *terms])
        return reply is not None

    def _terms_args(self, terms: CachedTerms, *, read_at: float) -> list:
        return [
            terms.version,
            terms.total,
            terms.per_user_limit,
            epoch_ms(terms.valid_from),
            epoch_ms(terms.valid_until),
            json.dumps(terms.row, separators=(",", ":")),
            self.terms_expire_at_ms(read_at),
            int(terms.paused),
            int(terms.new_customers_only),
        ]

    def terms_expire_at_ms(self, read_at: float) -> int:
        """Cached terms expire, on Redis's clock, `terms_lease` seconds after the database read
        they came from began: a staff change that could not reach Redis waits that long."""
        return int((read_at + self.terms_lease) * 1000)

    def stored(self, *, template_id: int, user_id: int) -> StoredCounts:
        """The confirmed counts Redis holds for the template and user (for operators and
        tests). Raises when Redis fails, unlike screen and record."""
        values = self.client.mget(self.keys(template_id, user_id)[:2])
        claimed, user = (None if v is None else int(v) for v in values)
        return StoredCounts(claimed=claimed, user=user)

    def stored_terms(self, *, template_id: int) -> dict[str, str] | None:
        """The cached terms of a template (None: none). Raises when Redis fails."""
        terms = self.client.hgetall(self.keys(template_id, 0)[2])
        return {_text(k): _text(v) for k, v in terms.items()} or None

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except REDIS_FAILURES:
            return False

    def rebuild_template(self, *, template_id: int, db_claimed: int) -> None:
        """Set the confirmed claimed count to the database's and drop every per-user count of
        the template and its cached terms (each comes back from the database on the next
        claim). For the rebuild command: raises when Redis fails, unlike screen and record."""
        claimed_key, _, terms_key, lease_key, _ = self.keys(template_id, 0)
        tag = hash_tag(template_id)
        batch = []
        for key in self.client.scan_iter(match=f"{self.prefix}coupon:peruser:{tag}:*", count=1000):
            batch.append(key)
            if len(batch) == 1000:
                self.client.delete(*batch)
                batch = []
        if batch:
            self.client.delete(*batch)
        self.client.delete(terms_key, lease_key)
        self.client.set(claimed_key, db_claimed)

    def _run(self, script, keys: list[str], args: list):
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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


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
    )


class UnavailableCounter:
    """Stands in for the counter while its Redis could not even be connected to (a Redis
    Cluster client asks the cluster for its slots when it is built): counts nothing, like a
    counter in back-off."""

    def __init__(self) -> None:
        self.terms_lease = settings.COUPON_TERMS_LEASE

    def screen(self, **claim) -> None:
        return None

    def record(self, **facts) -> bool:
        return False

    def fence(self, **change) -> bool:
        return False

    def publish(self, terms: CachedTerms, **change) -> bool:
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
