"""The mixed claim storm: more users than coupons, so the answers turn from 201 to 409
`sold_out` part-way; with Redis up, or with the bench's redis-server stopped."""

from bench.harness import Harness
from bench.progress import log
from bench.results import ClaimRow
from bench.scenarios.claims import measure


def run(harness: Harness, name: str, *, redis_up: bool) -> ClaimRow:
    from bench import seed

    sizes = harness.sizes
    template_id = seed.create_template(name, total=sizes.storm_total)
    tokens = [user.token for user in harness.users(name, sizes.storm_users)]
    log(
        f"[{name}] {len(tokens)} users claim template {template_id} (total={sizes.storm_total})"
        f" at c={sizes.concurrency}, Redis {'up' if redis_up else 'STOPPED'}"
    )
    return measure(
        harness,
        name,
        template_id=template_id,
        tokens=tokens,
        rows_before=0,
        expected_201=sizes.storm_total,
        redis_up=redis_up,
    )


def run_with_redis_stopped(harness: Harness) -> ClaimRow:
    log("[storm_redis_stopped] stopping the bench's redis-server")
    harness.redis.stop()
    try:
        return run(harness, "storm_redis_stopped", redis_up=False)
    finally:
        harness.redis.start()
        log("[storm_redis_stopped] redis-server restarted")
