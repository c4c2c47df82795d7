"""The app's Prometheus metrics, defined once (SPEC section 25). Every layer counts here;
ops/vitals.py serves them at /metrics. Under the app's server each worker writes its values to
files in PROMETHEUS_MULTIPROC_DIR (set by config/serve.py before any worker starts) and the
scrape adds them up; without it (runserver, tests) they live in this process.

Labels are bounded on purpose: a route is its URL pattern, never the path asked for."""

import time

import redis
from prometheus_client import Counter, Gauge, Histogram

# Seconds: a Redis round trip is ~0.2 ms, a database one ~0.5 ms, a request 1-50 ms; the top
# buckets catch the timeouts (Redis 250 ms, database 2 s).
ROUND_TRIP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

requests_total = Counter(
    "coupons_http_requests_total",
    "Requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
)
request_seconds = Histogram(
    "coupons_http_request_seconds",
    "Time from the request reaching the app to its answer, by route pattern.",
    ["route"],
    buckets=REQUEST_BUCKETS,
)
claims_total = Counter(
    "coupons_claims_total",
    "Claims by id, by outcome (won, or the refusal's code) and by what decided it"
    " (redis: the screen refused; database: the decision ran).",
    ["outcome", "decided_by"],
)
claim_screen_answers_total = Counter(
    "coupons_claim_screen_answers_total",
    "What claim.lua answered, by screen answer (Redis down: unavailable).",
    ["answer"],
)
redis_round_trip_seconds = Histogram(
    "coupons_redis_round_trip_seconds",
    "One Redis round trip (a command or a pipeline), from sending to the first reply.",
    buckets=ROUND_TRIP_BUCKETS,
)
database_round_trip_seconds = Histogram(
    "coupons_database_round_trip_seconds",
    "One database statement, from sending to its result.",
    buckets=ROUND_TRIP_BUCKETS,
)
database_breaker_open = Gauge(
    "coupons_database_breaker_open",
    "1 while a worker's database breaker refuses requests (the database was found away).",
    multiprocess_mode="livemax",
)
idempotent_replays_total = Counter(
    "coupons_idempotent_replays_total",
    "Requests answered from an Idempotency-Key's record: a stored answer, or an effect that"
    " committed without one.",
    ["kind"],
)


class TimedRedisConnection(redis.Connection):
    """A redis-py connection that times each round trip into redis_round_trip_seconds: from
    sending a command (or a pipeline's commands) to reading the first reply after it, so a
    pipeline is one round trip, as it is on the wire."""

    _sent_at: float | None = None

    def send_packed_command(self, *args, **kwargs) -> None:
        if self._sent_at is None:
            self._sent_at = time.perf_counter()
        super().send_packed_command(*args, **kwargs)

    def read_response(self, *args, **kwargs):
        try:
            return super().read_response(*args, **kwargs)
        finally:
            sent_at, self._sent_at = self._sent_at, None
            if sent_at is not None:
                redis_round_trip_seconds.observe(time.perf_counter() - sent_at)


def timed_statement(execute, sql, params, many, context):
    """A Django execute wrapper (installed on every connection by ops/apps.py): times each
    statement into database_round_trip_seconds."""
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        database_round_trip_seconds.observe(time.perf_counter() - started)
