"""In-process CPU per request of the shopper list and of the baseline with each per-request
extra taken away, one thread, production settings on MariaDB (SPEC section 15).

    .venv/bin/python scripts/measure_request_cpu.py [--requests 400] [--profile list]

Scenarios, one request of each per round (so load from elsewhere on the machine weighs on all
alike): `GET /api/auth/me` as configured (the baseline); the same without each middleware,
without the connection health check, without the revocation digest; `GET /api/coupons` over
20 public templates. Before every request the script does what a WSGI server's request_started
signal does (`close_old_connections`, which Django's test client switches off), so the health
check's ping is counted where it is configured. Statements per request are counted in-process
(CaptureQueriesContext); the bench reads them from its own database server.

It creates (and drops afterwards) its own database `coupons_cpu_<pid>` on DATABASE_URL's
server (default 127.0.0.1:3306, root without a password) and uses its own Redis key prefix."""

import argparse
import importlib
import os
import random
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
DATABASE = f"coupons_cpu_{os.getpid()}"
PREFIX = f"cpu-{os.getpid()}:"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
SERVER = urlsplit(os.environ.get("DATABASE_URL", "mysql://root@127.0.0.1:3306/"))
os.environ["DATABASE_URL"] = SERVER._replace(path=f"/{DATABASE}").geturl()
os.environ["COUPON_REDIS_PREFIX"] = PREFIX
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(60))

LIST_TEMPLATES = 20


def measure_interleaved(
    scenarios: dict[str, Callable[[], None]], count: int, warmup: int
) -> dict[str, tuple[float, float]]:
    """Median CPU and wall milliseconds per request of each scenario. The order is shuffled
    every round: whichever request comes first in a round pays for more cache misses."""
    for _ in range(warmup):
        for action in scenarios.values():
            action()
    cpu: dict[str, list[float]] = {name: [] for name in scenarios}
    wall: dict[str, list[float]] = {name: [] for name in scenarios}
    order = list(scenarios.items())
    for _ in range(count):
        random.shuffle(order)
        for name, action in order:
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            action()
            cpu[name].append((time.process_time() - cpu_start) * 1000)
            wall[name].append((time.perf_counter() - wall_start) * 1000)
    return {
        name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in scenarios
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="measured per scenario")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--profile", help="cProfile the scenario whose name contains this")
    parser.add_argument("--only", help="measure only the scenarios whose names contain this")
    args = parser.parse_args()

    import MySQLdb

    admin = MySQLdb.connect(
        host=SERVER.hostname or "127.0.0.1",
        port=SERVER.port or 3306,
        user=SERVER.username or "root",
    )
    admin.cursor().execute(f"CREATE DATABASE {DATABASE}")
    try:
        run(args.requests, args.warmup, args.profile, args.only)
    finally:
        from django.db import connections

        connections.close_all()  # an open transaction would hold the DROP on a metadata lock
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.close()


def run(count: int, warmup: int, profiled: str | None, only: str | None) -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import close_old_connections, connection
    from django.test import Client, override_settings
    from django.test.utils import CaptureQueriesContext
    from rest_framework_simplejwt.tokens import AccessToken

    from coupons.models import CouponTemplate

    try:
        from core import clock
    except ImportError:  # an older tree (version 1) kept the clock in config
        clock = importlib.import_module("config.clock")

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create(username="cpu", password="!")
    token = f"Bearer {AccessToken.for_user(user)}"
    now = clock.now()
    for index in range(LIST_TEMPLATES):
        CouponTemplate.objects.create(
            name=f"cpu {index}",
            type="direct",
            value=100,
            total=1000,
            valid_from=now - timedelta(days=1),
            valid_until=now + timedelta(days=1),
        )
    try:  # as coupon_template_publish does: the shopper list's version row is made
        from coupons.shopper_list import published_terms_changed
    except ImportError:  # a tree before the shopper list kept its terms
        pass
    else:
        published_terms_changed()

    def client_with(middleware: list[str]) -> Client:
        client = Client()
        with override_settings(MIDDLEWARE=middleware):
            client.handler.load_middleware()
        return client

    everything = list(settings.MIDDLEWARE)
    clients = {"as configured": client_with(everything)}
    # The auth and messages middlewares need the session's: they go with it.
    needs_sessions = {"AuthenticationMiddleware", "MessageMiddleware"}
    for dotted in everything:
        name = dotted.rsplit(".", 1)[1]
        if name in needs_sessions:
            continue
        gone = {name} | (needs_sessions if name == "SessionMiddleware" else set())
        clients[f"without {' + '.join(sorted(gone))}"] = client_with(
            [kept for kept in everything if kept.rsplit(".", 1)[1] not in gone]
        )
    clients["no middleware at all"] = client_with([])

    def request(client: Client, path: str, health_checks: bool = True) -> Callable[[], None]:
        def send() -> None:
            connection.settings_dict["CONN_HEALTH_CHECKS"] = health_checks
            close_old_connections()  # what request_started does under a server
            response = client.get(path, HTTP_AUTHORIZATION=token)
            if response.status_code != 200:
                raise RuntimeError(f"{path}: {response.status_code} {response.content[:200]!r}")

        return send

    def without_revocation_digest() -> Callable[[], None] | None:
        try:
            from accounts import authentication
        except ImportError:
            try:
                # version 2 before the layout
                authentication = importlib.import_module("config.authentication")
            except ImportError:  # version 1 has no revocation check
                return None

        real = authentication.get_md5_hash_password
        send = request(clients["as configured"], "/api/auth/me")

        def unrevoked() -> None:
            # The token's digest compared with itself: the check's cost is gone, the rest stays.
            authentication.get_md5_hash_password = lambda password: digest  # type: ignore[assignment,return-value]
            try:
                send()
            finally:
                authentication.get_md5_hash_password = real

        digest = AccessToken(token.split()[1]).payload.get("hash_password")  # type: ignore[arg-type]
        return unrevoked

    scenarios: dict[str, Callable[[], None]] = {
        f"GET /api/auth/me {name}": request(client, "/api/auth/me")
        for name, client in clients.items()
    }
    # The same request twice under two names: how far apart two equal rows come out.
    scenarios["GET /api/auth/me as configured, again"] = request(
        clients["as configured"], "/api/auth/me"
    )
    scenarios["GET /api/auth/me without the health check ping"] = request(
        clients["as configured"], "/api/auth/me", health_checks=False
    )
    unrevoked = without_revocation_digest()
    if unrevoked is not None:
        scenarios["GET /api/auth/me without the revocation digest"] = unrevoked
    scenarios[f"GET /api/coupons ({LIST_TEMPLATES} templates)"] = request(
        clients["as configured"], "/api/coupons"
    )

    if only:
        scenarios = {name: action for name, action in scenarios.items() if only in name}
    for name, action in scenarios.items():
        action()
        with CaptureQueriesContext(connection) as captured:
            action()
        scenarios_queries[name] = len(captured.captured_queries)

    if profiled:
        import cProfile
        import pstats

        name = next(name for name in scenarios if profiled in name)
        for _ in range(warmup):
            scenarios[name]()
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [scenarios[name]() for _ in range(count)])
        print(f"--- {name}: {count} requests")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(50)
        return

    timings = measure_interleaved(scenarios, count, warmup)
    baseline = next(iter(timings.values()))[0]
    print(f"{'scenario':62} {'CPU ms p50':>10} {'vs base':>8} {'wall ms p50':>11} {'SQL':>4}")
    for name, (cpu, wall) in timings.items():
        print(
            f"{name:62} {cpu:10.3f} {cpu - baseline:+8.3f} {wall:11.3f}"
            f" {scenarios_queries[name]:4d}"
        )


scenarios_queries: dict[str, int] = {}

if __name__ == "__main__":
    main()
