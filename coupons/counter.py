"""CouponCounter: the advisory Redis counters of SPEC section 3. Redis only, no ORM.

Redis never decides a claim: every error is logged and swallowed, and after one the counter
stays away from Redis for a short back-off so an outage costs requests nothing."""

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

LUA_DIR = Path(__file__).resolve().parent / "lua"


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
RESULT_BY_CODE: dict[int, CounterResult] = {
    0: CouponClaimed(),
    1: CouponSoldOut(),
    2: CouponNotInWindow(),
    3: CouponLimitReached(),
}


@dataclass(frozen=True)
class ClaimTerms:
    """What the claim script needs to know about a template, read from the database."""

    template_id: int
    total: int
    per_user_limit: int
    valid_from: datetime
    valid_until: datetime


def hash_tag(template_id: int) -> str:
    """`{T}`: Redis Cluster hashes only this part, so one template's keys share a slot."""
    return f"{{{template_id}}}"


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class CouponCounter:
    def __init__(
        self,
        url: str,
        *,
        prefix: str = "",
        claim_timeout: float = 0.25,
        sync_timeout: float = 2.0,
        backoff: float = 5.0,
    ):
        self.prefix = prefix
        self.backoff = backoff
        # Connecting is quick when Redis is up, so both clients fail fast when it is not.
        self._claim_client = redis.Redis.from_url(
            url, socket_timeout=claim_timeout, socket_connect_timeout=claim_timeout
        )
        self._sync_client = redis.Redis.from_url(
            url, socket_timeout=sync_timeout, socket_connect_timeout=claim_timeout
        )
        # register_script loads each script once and reloads it by itself after a
        # SCRIPT FLUSH or a Redis restart (NOSCRIPT -> SCRIPT LOAD).
        self._claim_script = self._claim_client.register_script((LUA_DIR / "claim.lua").read_text())
        self._sync_script = self._sync_client.register_script((LUA_DIR / "sync.lua").read_text())
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
        claim_budget: bool = False,
    ) -> bool:
        """SyncCouponCounts: overwrite both counters with database facts where not older.
        Returns whether Redis answered. Never raises. `claim_budget` runs it within the claim
        timeout: for a request whose first Redis call this is (the fast rejection), where a
        hanging Redis would otherwise cost the 2 s sync timeout."""
        keys = self.keys(template_id, user_id)
        client = self._claim_client if claim_budget else self._sync_client
        return self._run(self._sync_script, keys, [db_claimed, db_user], client) is not None

    def ping(self) -> bool:
        try:
            return bool(self._claim_client.ping())
        except redis.RedisError:
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
            for key in self._sync_client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) == 1000:
                    self._sync_client.delete(*batch)
                    batch = []
            if batch:
                self._sync_client.delete(*batch)
        self._sync_client.mset({claimed_key: db_claimed, version_key: db_claimed})

    def _run(self, script, keys: list[str], args: list[int], client=None):
        if time.monotonic() < self._skip_until:
            return None
        try:
            return script(keys=keys, args=args, client=client)
        except redis.RedisError as error:
            self._skip_until = time.monotonic() + self.backoff
            logger.warning(
                "coupon counter unavailable, skipping Redis for %.1fs: %r", self.backoff, error
            )
            return None


_counter: CouponCounter | None = None
_counter_config: tuple | None = None


def coupon_counter() -> CouponCounter:
    """The process's CouponCounter, rebuilt when its settings change (tests change them)."""
    global _counter, _counter_config
    config = (
        settings.REDIS_URL,
        settings.COUPON_REDIS_PREFIX,
        settings.COUPON_COUNTER_CLAIM_TIMEOUT,
        settings.COUPON_COUNTER_SYNC_TIMEOUT,
        settings.COUPON_COUNTER_BACKOFF,
    )
    if _counter is None or _counter_config != config:
        url, prefix, claim_timeout, sync_timeout, backoff = config
        _counter = CouponCounter(
            url,
            prefix=prefix,
            claim_timeout=claim_timeout,
            sync_timeout=sync_timeout,
            backoff=backoff,
        )
        _counter_config = config
    return _counter
