"""The counter's calls on a request's path, which must never fail it: a script, or several
in one round trip, sent unless Redis failed within the back-off; a failure is logged, starts
the back-off and answers None, so an outage costs requests nothing."""

import logging
import time

import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from core.redis_scripts import ScriptCall, calls_answered

logger = logging.getLogger("coupons.issuing.counter")

RedisClient = redis.Redis | RedisCluster
# What a Redis (or Redis Cluster) failure may raise: RedisClusterException is not a RedisError.
REDIS_FAILURES = (redis.RedisError, RedisClusterException)


class CallsWithBackoff:
    def __init__(self, client: RedisClient, *, backoff: float) -> None:
        self.client = client
        self.backoff = backoff
        self._skip_until = 0.0

    def run(self, call: ScriptCall):
        """The script's reply, or None when Redis is skipped or fails."""
        if time.monotonic() < self._skip_until:
            return None
        try:
            if isinstance(self.client, RedisCluster):  # EVALSHA on the node of its keys
                return self.client.register_script(call.script)(keys=call.keys, args=call.args)
            return calls_answered(self.client, [call])[0]
        except REDIS_FAILURES as error:
            self._failed(error)
            return None

    def run_together(self, calls: list[ScriptCall]) -> list | None:
        """The calls' replies, sent in one round trip (`calls_answered`: a script Redis lost
        is loaded and its call alone sent again), or None when Redis is skipped or fails. A
        single Redis's only (the counter's that is the cache's too)."""
        if time.monotonic() < self._skip_until:
            return None
        if isinstance(self.client, RedisCluster):
            raise TypeError("calls in one round trip need a single Redis")
        try:
            return calls_answered(self.client, calls)
        except REDIS_FAILURES as error:
            self._failed(error)
            return None

    def _failed(self, error: BaseException) -> None:
        self._skip_until = time.monotonic() + self.backoff
        logger.warning(
            "coupon counter unavailable, skipping Redis for %.1fs: %r", self.backoff, error
        )
