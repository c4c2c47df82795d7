"""CouponCounter: the advisory Redis counters of SPEC section 3. Redis only, no ORM.

Redis never decides a claim: every error is logged and swallowed, and after one the counter
stays away from Redis for a short back-off so an outage costs requests nothing.

The counter is given its Redis client (a `redis.Redis` or a `redis.cluster.RedisCluster`);
coupons/issuing/counter_setup.py builds the process's counter from the settings."""

import json
from datetime import datetime
from pathlib import Path

from core.drawn_ids import drawn_hex
from core.redis_scripts import RAISE_ONLY_SCRIPT, ScriptCall
from coupons.issuing.redis_calls import REDIS_FAILURES, CallsWithBackoff, RedisClient
from coupons.issuing.screen_answers import (
    CachedTerms,
    ScreenResult,
    StoredCounts,
    screen_result_of,
)

LUA_DIR = Path(__file__).resolve().parent / "lua"


# Per-user keys live until the claim window ends plus this margin (for app clocks a little
# apart); after that a claim is refused by the window anyway, so nothing needs them.
PER_USER_KEYS_OUTLIVE_WINDOW_MS = 60_000
# A fence must outlive every claim that may still write back the terms it fences out: such a
# write lands at most a lease after the claim's read, and then expires on arrival anyway. A
# fence a failed change left behind only keeps the terms out of Redis this long.
FENCE_TTL_MS = 60_000


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
        shares_cache_redis: bool = False,
    ):
        """`client` should time out within the claim budget (SPEC section 3: 250 ms), since
        every call here is made on a request's path. Cached terms live `terms_lease` seconds
        from the database read they came from (see `terms_expire_at`)."""
        self.client = client
        self.prefix = prefix
        self._calls = CallsWithBackoff(client, backoff=backoff)
        self.terms_lease = terms_lease
        # Whether `client` is the cache's Redis too (the same server and database, not a
        # cluster): then a call to the cache's Redis may ride along a screen (`screen_with`).
        self.shares_cache_redis = shares_cache_redis
        # The request path's scripts go by their text (CallsWithBackoff.run: EVALSHA, and the
        # script loaded again after a SCRIPT FLUSH or a Redis restart); register_script does
        # the same for the others.
        self._claim_text = (LUA_DIR / "claim.lua").read_text()
        self._sync_text = (LUA_DIR / "sync.lua").read_text()
        self._terms_text = (LUA_DIR / "terms.lua").read_text()
        self._lower_script = client.register_script((LUA_DIR / "lower.lua").read_text())
        self._raise_only_script = client.register_script(RAISE_ONLY_SCRIPT)

    # Key naming: the template id in literal braces is the Redis Cluster hash tag, so every
    # key of one template (the throttle's too) lives in one slot, as a Lua script requires.
    # The counts are keyed by the template's incarnation too (CouponTemplate.incarnation), so
    # a template id that a restored database hands out again starts with no counts; the
    # terms, which carry the incarnation, are keyed by the id alone, so that the claim's
    # screen can find them knowing only the id (claim.lua builds the count keys from them).

    def count_bases(self, template_id: int) -> list[str]:
        """claimed, peruser: the count keys without the incarnation (nor the user)."""
        tag = hash_tag(template_id)
        return [f"{self.prefix}coupon:claimed:{tag}:", f"{self.prefix}coupon:peruser:{tag}:"]

    def count_keys(self, template_id: int, incarnation: str, user_id: int) -> list[str]:
        """claimed, peruser: the confirmed counts of one incarnation of the template."""
        claimed, peruser = self.count_bases(template_id)
        return [f"{claimed}{incarnation}", f"{peruser}{incarnation}:{user_id}"]

    def terms_keys(self, template_id: int) -> list[str]:
        """terms, terms-lease, terms-fence."""
        tag = hash_tag(template_id)
        return [
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
        call = self._screen_call(template_id, user_id, now, throttle_limit, window, throttle_period)
        reply = self._calls.run(call)
        return None if reply is None else screen_result_of(reply)

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
        """`screen`, with another script's call sent first in the same round trip (a
        pipeline), and that call's reply; (None, None) when Redis is unavailable. Only for
        a counter whose Redis `shares_cache_redis`. Never raises."""
        call = self._screen_call(template_id, user_id, now, throttle_limit, window, throttle_period)
        replies = self._calls.run_together([ride_along, call])
        if replies is None:
            return None, None
        along, screened = replies
        return screen_result_of(screened), along

    def _screen_call(
        self,
        template_id: int,
        user_id: int,
        now: datetime,
        throttle_limit: int,
        window: int,
        throttle_period: int,
    ) -> ScriptCall:
        terms, lease, _ = self.terms_keys(template_id)
        claimed, peruser = self.count_bases(template_id)
        keys = [terms, lease, claimed, peruser, self.throttle_key(template_id, user_id, window)]
        args = [
            epoch_ms(now),
            throttle_limit,
            throttle_period,
            drawn_hex(),
            int(self.terms_lease * 1000),
            user_id,
        ]
        return ScriptCall(self._claim_text, keys, args)

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
        """Record what the database showed (counts as floors) and, with the lease handed out
        by `screen`, the terms read at `read_at` (time.time() before the read). Returns whether
        Redis answered. Never raises."""
        claimed, peruser = self.count_keys(template_id, incarnation, user_id)
        terms_key, lease_key, fence = self.terms_keys(template_id)
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
        return self._calls.run(ScriptCall(self._sync_text, keys, args)) is not None

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
        terms_key, lease, fence_key = self.terms_keys(template_id)
        ttl = max(FENCE_TTL_MS, int(self.terms_lease * 4000))
        reply = self._calls.run(
            ScriptCall(self._terms_text, [terms_key, lease, fence_key], [fence, ttl, *terms])
        )
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
            int(terms.claimable_by_id),
            terms.incarnation,
        ]

    def terms_expire_at_ms(self, read_at: float) -> int:
        """Cached terms expire, on Redis's clock, `terms_lease` seconds after the database read
        they came from began: a staff change that could not reach Redis waits that long."""
        return int((read_at + self.terms_lease) * 1000)

    def stored(self, *, template_id: int, incarnation: str, user_id: int) -> StoredCounts:
        """The confirmed counts Redis holds for the template and user (for operators and
        tests). Raises when Redis fails, unlike screen and record."""
        values = self.client.mget(self.count_keys(template_id, incarnation, user_id))
        claimed, user = (None if v is None else int(v) for v in values)
        return StoredCounts(claimed=claimed, user=user)

    def stored_terms(self, *, template_id: int) -> dict[str, str] | None:
        """The cached terms of a template (None: none). Raises when Redis fails."""
        terms = self.client.hgetall(self.terms_keys(template_id)[0])
        return {_text(k): _text(v) for k, v in terms.items()} or None

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except REDIS_FAILURES:
            return False

    def rebuild_template(
        self, *, template_id: int, incarnation: str, db_claimed: int, ttl_ms: int
    ) -> None:
        """Set the confirmed claimed count to the database's and drop every other count of the
        template id (per-user counts, those of other incarnations) and its cached terms (each
        comes back from the database on the next claim). For the rebuild command: raises when
        Redis fails, unlike screen and record."""
        self.forget_template(template_id=template_id)
        claimed_key = self.count_keys(template_id, incarnation, 0)[0]
        self.client.set(claimed_key, db_claimed, px=max(ttl_ms, 1))

    def forget_template(self, *, template_id: int) -> None:
        """Drop every count and the cached terms of a template id (the fence stays, expiring
        by itself). Raises when Redis fails."""
        terms_key, lease_key, _ = self.terms_keys(template_id)
        for base in self.count_bases(template_id):
            self._delete_matching(f"{base}*")
        self.client.delete(terms_key, lease_key)

    def epoch_key(self) -> str:
        """The database's epoch as Redis last saw it (coupons/models/counter_epoch.py)."""
        return f"{self.prefix}coupon:epoch"

    def epoch(self) -> int | None:
        """The epoch Redis holds (None: none). Raises when Redis fails."""
        value = self.client.get(self.epoch_key())
        return None if value is None else int(value)

    def epoch_raise(self, epoch: int) -> None:
        """Raise the epoch Redis holds to `epoch`, never lower it: a Redis holding less than
        what was once written there went back in time. Raises when Redis fails."""
        self._raise_only_script(keys=[self.epoch_key()], args=[epoch])

    def template_ids_held(self) -> set[int]:
        """Every template id Redis holds a count or cached terms of. Raises when Redis fails."""
        held = set()
        for kind in ("claimed", "peruser", "terms"):
            pattern = f"{self.prefix}coupon:{kind}:{{*"
            for key in self.client.scan_iter(match=pattern, count=1000):
                tag = _text(key)[len(pattern) - 1 :].split("}", 1)[0]
                if tag.isdigit():
                    held.add(int(tag))
        return held

    def lower(self, *, template_id: int, incarnation: str, claimed: int, users: dict) -> int:
        """Lower the confirmed counts Redis holds above the database's: the claimed count to
        `claimed`, and each user's in `users` (user id -> count). Never raises them (Redis
        never admits, so a lower count is always safe). Returns how many keys were lowered.
        Raises when Redis fails."""
        keys = [self.count_keys(template_id, incarnation, 0)[0]]
        values = [claimed]
        for user_id, count in users.items():
            keys.append(self.count_keys(template_id, incarnation, user_id)[1])
            values.append(count)
        return int(self._lower_script(keys=keys, args=values))

    def user_counts_held(self, incarnations: dict[int, str]) -> dict[int, dict[int, int]]:
        """The per-user counts Redis holds of these templates (id -> incarnation), in one scan
        of the keys: template id -> user id -> count. Raises when Redis fails."""
        keys: dict[int, list[str]] = {}
        pattern = f"{self.prefix}coupon:peruser:{{*"
        for key in self.client.scan_iter(match=pattern, count=1000):
            tag, _, rest = _text(key)[len(pattern) - 1 :].partition("}:")
            incarnation, _, user = rest.partition(":")
            if tag.isdigit() and incarnations.get(int(tag)) == incarnation and user.isdigit():
                keys.setdefault(int(tag), []).append(_text(key))
        held: dict[int, dict[int, int]] = {}
        for template_id, template_keys in keys.items():
            users = held.setdefault(template_id, {})
            for start in range(0, len(template_keys), 1000):
                batch = template_keys[start : start + 1000]  # one slot: the template's tag
                for key, value in zip(batch, self.client.mget(batch), strict=True):
                    if value is not None:
                        users[int(key.rsplit(":", 1)[1])] = int(value)
        return held

    def _delete_matching(self, pattern: str) -> None:
        batch = []
        for key in self.client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) == 1000:
                self.client.delete(*batch)
                batch = []
        if batch:
            self.client.delete(*batch)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
