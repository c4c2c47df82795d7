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
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
DATABASE = f"coupons_cpu_{os.getpid()}"
# The MariaDB server's port (a private server keeps other clients' load out of the numbers).
PORT = next(
    (sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--port"),
    str(urlsplit(os.environ.get("DATABASE_URL", "")).port or 3306),  # the caller's server
)
PREFIX = f"cpu-{os.getpid()}:"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
os.environ["DATABASE_URL"] = f"mysql://root@127.0.0.1:{PORT}/{DATABASE}"
os.environ["COUPON_REDIS_PREFIX"] = PREFIX
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(60))  # tokens live for this run only


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
    parser.add_argument(
        "--port", default=PORT, help="the MariaDB server's port (default: DATABASE_URL's, or 3306)"
    )
    args = parser.parse_args()

    import MySQLdb

    admin = MySQLdb.connect(host="127.0.0.1", port=int(PORT), user="root")
    admin.cursor().execute(f"CREATE DATABASE {DATABASE}")
    try:
        run(args.requests, args.warmup, args.profile)
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        import redis
        from django.conf import settings

        client = redis.Redis.from_url(settings.REDIS_URL)
        keys = list(client.scan_iter(match=f"{PREFIX}*", count=1000))
        if keys:
            client.delete(*keys)


def run(count: int, warmup: int, profiled: str | None) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from rest_framework_simplejwt.tokens import AccessToken

    from core import clock
    from coupons.services import issuing, templates

    call_command("migrate", verbosity=0)
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"cpu{i}", password="!") for i in range(4 * (count + warmup))
    )
    tokens = [f"Bearer {AccessToken.for_user(user)}" for user in users]
    now = clock.now()

    def template(total: int) -> int:
        return templates.coupon_template_publish(
            name=f"cpu {total}",
            type="direct",
            value=100,
            total=total,
            valid_from=now - timedelta(days=1),
            valid_until=now + timedelta(days=1),
        ).pk

    selling, sold_out, service_only = template(10**6), template(1), template(10**6)
    client = Client()

    def request(method: str, path: str, user: int, expected: int) -> None:
        response = getattr(client, method)(path, HTTP_AUTHORIZATION=tokens[user])
        if response.status_code != expected:
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:200]}")

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
