"""In-process CPU and wall time per request of the claim path, one thread, no contention, with
the production settings on MariaDB: the JWT baseline (GET /api/auth/me), a claim while the
template has room (a new user each time), a sold-out claim, and the claim service alone.

    .venv/bin/python scripts/measure_claim_cpu.py [--requests 400] [--profile 'sold out'] \
        [--port 3306]

It creates (and drops afterwards) its own database `coupons_cpu_<pid>` and counts under its
own Redis key prefix on REDIS_URL, deleting those keys afterwards. It only uses the HTTP API
and `issuing.coupon_claim`, so the same script measures older versions of the code too
(run it from their checkout). Prints one row per scenario: median and mean CPU (process time)
and wall time per request in milliseconds."""

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from measurement_support import PORT, PORT_HELP, ClaimFixture, configure, own_database

DATABASE = f"coupons_cpu_{os.getpid()}"
PREFIX = f"cpu-{os.getpid()}:"
configure(DATABASE)
os.environ["COUPON_REDIS_PREFIX"] = PREFIX


@dataclass(frozen=True)
class Timing:
    scenario: str
    cpu_ms_median: float
    cpu_ms_mean: float
    wall_ms_median: float
    wall_ms_mean: float


def measure_interleaved(
    scenarios: dict[str, Callable[[int], object]], count: int, warmup: int
) -> list[Timing]:
    """One request of each scenario per round, `count` rounds: load from other processes on
    the machine then weighs on every scenario alike."""
    for i in range(warmup):
        for action in scenarios.values():
            action(i)
    cpu: dict[str, list[float]] = {name: [] for name in scenarios}
    wall: dict[str, list[float]] = {name: [] for name in scenarios}
    for i in range(warmup, warmup + count):
        for name, action in scenarios.items():
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            action(i)
            cpu[name].append((time.process_time() - cpu_start) * 1000)
            wall[name].append((time.perf_counter() - wall_start) * 1000)
    return [
        Timing(
            name,
            statistics.median(cpu[name]),
            statistics.fmean(cpu[name]),
            statistics.median(wall[name]),
            statistics.fmean(wall[name]),
        )
        for name in scenarios
    ]


def profile(scenario: str, action: Callable[[int], object], count: int, warmup: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(lambda: [action(i) for i in range(warmup, warmup + count)])
    print(f"--- {scenario}: {count} requests")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="measured per scenario")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--profile", help="profile the scenario whose name contains this")
    parser.add_argument("--port", default=PORT, help=PORT_HELP)
    args = parser.parse_args()

    try:
        with own_database(DATABASE):
            run(args.requests, args.warmup, args.profile)
    finally:
        import redis
        from django.conf import settings

        client = redis.Redis.from_url(settings.REDIS_URL)
        keys = list(client.scan_iter(match=f"{PREFIX}*", count=1000))
        if keys:
            client.delete(*keys)


def run(count: int, warmup: int, profiled: str | None) -> None:
    import django

    django.setup()
    from coupons.issuing import service as issuing

    fixture = ClaimFixture(username_prefix="cpu", users=4 * (count + warmup))
    users, template, request = fixture.users, fixture.template, fixture.request
    selling, sold_out, service_only = template(10**6), template(1), template(10**6)

    request("post", f"/api/coupons/{sold_out}/claim", len(users) - 1, 201)
    per = count + warmup
    scenarios: dict[str, Callable[[int], object]] = {
        "baseline GET /api/auth/me": lambda i: request("get", "/api/auth/me", i, 200),
        "claim, template has room (201)": lambda i: request(
            "post", f"/api/coupons/{selling}/claim", per + i, 201
        ),
        "claim, sold out (409)": lambda i: request(
            "post", f"/api/coupons/{sold_out}/claim", 2 * per + i, 409
        ),
        "issuing.coupon_claim alone (issued)": lambda i: issuing.coupon_claim(
            template_id=service_only, user_id=users[3 * per + i].pk
        ),
    }
    if profiled:
        (name,) = [name for name in scenarios if profiled in name]
        for i in range(warmup):
            scenarios[name](i)
        profile(name, scenarios[name], count, warmup)
        return
    timings = measure_interleaved(scenarios, count, warmup)
    baseline = timings[0].cpu_ms_median
    print(
        f"{'scenario':38} {'CPU ms p50':>10} {'mean':>6} {'baseline/CPU':>12}"
        f" {'wall ms p50':>11} {'mean':>6}"
    )
    for t in timings:
        print(
            f"{t.scenario:38} {t.cpu_ms_median:10.2f} {t.cpu_ms_mean:6.2f}"
            f" {baseline / t.cpu_ms_median:12.2f} {t.wall_ms_median:11.2f} {t.wall_ms_mean:6.2f}"
        )


if __name__ == "__main__":
    main()
