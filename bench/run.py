"""`make bench`: claim storms, scale and list costs measured side by side in one run.

    python -m bench.run [--quick] [--worker-class sync|gthread] [--threads N] [--no-compare]

Creates a fresh MariaDB database, starts a private redis-server and gunicorn against them,
seeds users, tokens and data in-process, drives load from a separate process (bench.load),
prints a table on stdout and writes the same figures to bench/results/<timestamp>.json.
Progress goes to stderr. See bench/README.md for what each figure means."""

import argparse
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dj_database_url
import MySQLdb

from bench import profiling
from bench.cpu import CpuMeter
from bench.load import latency_figures
from bench.processes import Gunicorn, RedisServer, free_port
from bench.progress import log

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/coupons_bench"
# Measured on the 2-core machine (bench/README.md): 2 gthread workers x 2 threads served the
# baseline 20-45% faster than 2 sync workers (keep-alive; sync closes every connection) and the
# claim storm as fast or faster; more threads per worker made the storm slower (the thread
# holding the template's row lock waits for the GIL).
DEFAULT_WORKER_CLASS = "gthread"
DEFAULT_THREADS = 2
SCALE_WARMUP = 20  # claims on each scale template before the measured ones, not counted
SCALE_ROUNDS = 3
SCENARIOS = ("storm", "sold_out", "redis_stopped", "scale", "reads", "compare")


@dataclass(frozen=True)
class Sizes:
    baseline_requests: int
    baseline_warmup: int
    storm_users: int
    storm_total: int
    storm_concurrency: int
    sold_out_requests: int
    scale_existing: tuple[int, ...]
    scale_sequential: int
    scale_concurrent: int
    scale_concurrency: int
    list_templates: int
    mine_per_template: int
    read_requests: int


FULL = Sizes(
    baseline_requests=10_000,
    baseline_warmup=1_000,
    storm_users=5_000,
    storm_total=1_000,
    storm_concurrency=64,
    sold_out_requests=5_000,
    scale_existing=(0, 100_000, 1_000_000),
    scale_sequential=300,
    scale_concurrent=2_100,
    scale_concurrency=16,
    list_templates=1_000,
    mine_per_template=10,  # 10 x 1,000 templates = 10,000 coupons for one user
    read_requests=300,
)
QUICK = Sizes(
    baseline_requests=1_000,
    baseline_warmup=200,
    storm_users=500,
    storm_total=100,
    storm_concurrency=64,
    sold_out_requests=500,
    scale_existing=(0, 1_000, 10_000),
    scale_sequential=60,
    scale_concurrent=240,
    scale_concurrency=16,
    list_templates=1_000,
    mine_per_template=10,
    read_requests=50,
)


# --- Environment, database, servers -----------------------------------------------------------


def configure_environment(database_url: str, redis_url: str) -> dict[str, str]:
    """The settings both this process and gunicorn run with: production settings, the bench
    database and the bench's own Redis. Must run before Django is imported."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": os.environ.get("BENCH_SECRET_KEY", secrets.token_urlsafe(48)),
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            "LOG_LEVEL": "WARNING",
            "SECURE_COOKIES": "0",
            # The seeding loads a million rows in one statement, longer than the read
            # timeout a web request gets; the timeouts cost nothing per query either way.
            "DB_READ_TIMEOUT": "0",
            "DB_WRITE_TIMEOUT": "0",
        }
    )
    return dict(os.environ)


def recreate_database(database_url: str) -> str:
    config = dj_database_url.parse(database_url)
    name = config["NAME"]
    if not name or "`" in name:
        raise SystemExit(f"bad database name in {database_url!r}")
    connection = MySQLdb.connect(
        host=config["HOST"] or "127.0.0.1",
        port=int(config["PORT"] or 3306),
        user=config["USER"],
        password=config["PASSWORD"] or "",
    )
    try:
        cursor = connection.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        cursor.execute("SELECT VERSION()")
        return str(cursor.fetchone()[0])
    finally:
        connection.close()


def run_load_generator(
    base_url: str,
    requests: list[tuple[str, str, str]],
    *,
    concurrency: int,
    warmup: list[tuple[str, str, str]] | None = None,
    keep_latencies: bool = False,
) -> dict[str, Any]:
    """Run one load in the separate load-generator process and return its summary."""
    plan = {
        "base_url": base_url,
        "concurrency": concurrency,
        "requests": requests,
        "warmup": warmup or [],
        "keep_latencies": keep_latencies,
    }
    process = subprocess.run(
        [sys.executable, "-m", "bench.load"],
        input=json.dumps(plan),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    if process.returncode != 0:
        raise RuntimeError(f"load generator failed:\n{process.stderr[-3000:]}")
    return json.loads(process.stdout)


def describe(summary: dict[str, Any]) -> str:
    text = (
        f"{summary['requests']} req at c={summary['concurrency']}: {summary['rps']:.0f} req/s,"
        f" p50 {summary['p50_ms']:.1f} ms, p99 {summary['p99_ms']:.1f} ms,"
        f" statuses {summary['statuses']}"
    )
    phases = summary.get("phases")
    if phases:
        selling, after = phases["until_last_2xx"], phases["after_last_2xx"]
        text += (
            f"; until the last 2xx: {selling['requests']} req in {selling['seconds']:.1f} s"
            f" ({selling['rps']:.0f} req/s, p99 {selling['p99_ms']:.0f} ms), after:"
            f" {after['rps']:.0f} req/s, p99 {after['p99_ms']:.0f} ms"
        )
    if "cpu_cores" in summary:
        text += f"; CPU cores used {summary['cpu_cores']}"
    if "mariadb_server_counters" in summary:
        text += f"; MariaDB {summary['mariadb_server_counters']}"
    return text


# --- The benchmark ----------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.sizes = QUICK if args.quick else FULL
        self.workdir = workdir
        self.database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
        self.redis = RedisServer(free_port(), log_dir=workdir)
        self.env = configure_environment(self.database_url, self.redis.url)
        self.app_port = free_port()
        self.gunicorn: Gunicorn | None = None
        self.results: dict[str, Any] = {}
        self.checks: dict[str, Any] = {}
        self.user_batches = 0
        self.server_description = ""
        self.stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")

    # servers

    def start_app(self, worker_class: str) -> Gunicorn:
        if self.gunicorn is not None:
            self.gunicorn.stop()
        self.gunicorn = Gunicorn(
            port=self.app_port,
            workers=os.cpu_count() or 1,
            worker_class=worker_class,
            threads=self.args.threads,
            env=self.env,
            log_dir=self.workdir,
            cwd=REPO_ROOT,
        )
        self.gunicorn.start()
        return self.gunicorn

    def stop_all(self) -> None:
        if self.gunicorn is not None:
            self.gunicorn.stop()
        self.redis.stop()

    @property
    def base_url(self) -> str:
        assert self.gunicorn is not None
        return self.gunicorn.base_url

    # helpers

    def users(self, label: str, count: int, *, quiet: bool = False) -> list[tuple[int, str]]:
        from bench import seed

        self.user_batches += 1
        started = time.monotonic()
        users = seed.create_users(f"{label}-{self.user_batches}", count)
        if not quiet:
            log(
                f"created {count} users '{label}' with tokens in {time.monotonic() - started:.1f} s"
            )
        return users

    def drive(
        self,
        requests: list[tuple[str, str, str]],
        *,
        concurrency: int,
        warmup: list[tuple[str, str, str]] | None = None,
        keep_latencies: bool = False,
    ) -> dict[str, Any]:
        """One load run against the app, with the CPU cores each party used meanwhile."""
        assert self.gunicorn is not None and self.gunicorn.process is not None
        meter = CpuMeter(
            app_master=self.gunicorn.process.pid,
            redis_pid=self.redis.process.pid if self.redis.process else None,
        )
        before, started = meter.snapshot(), time.monotonic()
        summary = run_load_generator(
            self.base_url,
            requests,
            concurrency=concurrency,
            warmup=warmup,
            keep_latencies=keep_latencies,
        )
        summary["cpu_cores"] = meter.cores(before, meter.snapshot(), time.monotonic() - started)
        return summary

    def profiled(self, scenario: str, into: dict[str, Any]) -> AbstractContextManager[None]:
        if not self.args.profile or self.gunicorn is None or self.gunicorn.process is None:
            return nullcontext()
        RESULTS_DIR.mkdir(exist_ok=True)
        output = RESULTS_DIR / f"{self.stamp}-{scenario}.speedscope.json"
        return profiling.profiled(self.gunicorn.process.pid, output, into)

    def route_exists(self, path: str) -> bool:
        from django.urls import Resolver404, resolve

        try:
            resolve(path)
        except Resolver404:
            return False
        return True

    # scenarios

    def setup(self) -> None:
        log(f"recreating database {self.database_url}")
        self.mariadb_version = recreate_database(self.database_url)
        import django

        # Whitenoise warns that STATIC_ROOT is empty; the benchmark serves no static files.
        warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        log(f"migrated; starting redis-server on port {self.redis.port}")
        self.redis.start()

    def baseline(self, key: str = "baseline") -> dict[str, Any]:
        sizes = self.sizes
        users = self.users("base", sizes.storm_concurrency)
        tokens = [token for _, token in users]

        def requests(count: int) -> list[tuple[str, str, str]]:
            return [("GET", "/api/auth/me", tokens[i % len(tokens)]) for i in range(count)]

        log(f"[{key}] GET /api/auth/me x{sizes.baseline_requests} at c={sizes.storm_concurrency}")
        summary = self.drive(
            requests(sizes.baseline_requests),
            concurrency=sizes.storm_concurrency,
            warmup=requests(sizes.baseline_warmup),
        )
        log(f"[{key}] {describe(summary)}")
        self.results[key] = summary
        return summary

    def claim_available(self) -> bool:
        return self.route_exists("/api/coupons/1/claim")

    def storm(self, key: str, *, redis_up: bool) -> tuple[int, dict[str, Any]]:
        from bench import seed

        sizes = self.sizes
        template_id = seed.create_template(key, total=sizes.storm_total)
        users = self.users(key, sizes.storm_users)
        path = f"/api/coupons/{template_id}/claim"
        log(
            f"[{key}] {len(users)} users claim template {template_id} (total={sizes.storm_total})"
            f" at c={sizes.storm_concurrency}, Redis {'up' if redis_up else 'STOPPED'}"
        )
        before = seed.server_counters()
        extra: dict[str, Any] = {}
        with self.profiled(key, extra):
            summary = self.drive(
                [("POST", path, token) for _, token in users],
                concurrency=sizes.storm_concurrency,
            )
        summary.update(extra)
        summary["mariadb_server_counters"] = seed.counters_delta(before, seed.server_counters())
        summary["template_id"] = template_id
        summary["checks"] = self.storm_checks(summary, template_id, redis_up=redis_up)
        log(f"[{key}] {describe(summary)}; checks {summary['checks']}")
        self.results[key] = summary
        return template_id, summary

    def storm_checks(
        self, summary: dict[str, Any], template_id: int, *, redis_up: bool
    ) -> dict[str, Any]:
        from bench import seed

        total = self.sizes.storm_total
        facts = seed.claim_facts(template_id)
        statuses = summary["statuses"]
        checks: dict[str, Any] = {
            **facts,
            "created_201": statuses.get("201", 0),
            "rejections_are_sold_out": set(summary["codes"]) <= {"sold_out"},
        }
        exact = (
            facts["rows"] == total
            and facts["distinct_users"] == total
            and facts["claimed_count"] == total
            and checks["created_201"] == total
        )
        if redis_up:
            from coupons.counter import coupon_counter

            claimed_key = coupon_counter().keys(template_id, 0)[0]  # the adapter names keys
            raw = self.redis.client().get(claimed_key)
            checks["redis_counter"] = None if raw is None else int(raw)
            exact = exact and checks["redis_counter"] == total
        checks["exact"] = exact
        return checks

    def sold_out(self, template_id: int) -> dict[str, Any]:
        from bench import seed

        sizes = self.sizes
        users = self.users("soldout", sizes.sold_out_requests)
        path = f"/api/coupons/{template_id}/claim"
        log(f"[sold_out] {len(users)} more claims on sold-out template {template_id}")
        extra: dict[str, Any] = {}
        with self.profiled("sold_out", extra):
            summary = self.drive(
                [("POST", path, token) for _, token in users],
                concurrency=sizes.storm_concurrency,
            )
        summary.update(extra)
        facts = seed.claim_facts(template_id)
        summary["checks"] = {
            **facts,
            "all_409_sold_out": summary["codes"].get("sold_out", 0) == len(users),
            "unchanged": facts["rows"] == sizes.storm_total
            and facts["claimed_count"] == sizes.storm_total,
        }
        log(f"[sold_out] {describe(summary)}; checks {summary['checks']}")
        self.results["sold_out"] = summary
        return summary

    def scale(self) -> None:
        """Claim latency on templates holding 0 .. 1,000,000 claims. All the data is loaded
        first; then the measurements go round-robin over the templates (SCALE_ROUNDS rounds,
        each starting at a different template) so that drift over time, such as InnoDB
        flushing the bulk load in the background, falls on every template alike."""
        from bench import seed

        sizes = self.sizes
        most = max(sizes.scale_existing)
        started = time.monotonic()
        seed.insert_holders(most)
        log(f"[scale] inserted {most} holder users in {time.monotonic() - started:.1f} s")
        claims = sizes.scale_sequential + sizes.scale_concurrent
        templates: list[tuple[int, int, str]] = []  # existing claims, template id, claim path
        for existing in sizes.scale_existing:
            template_id = seed.create_template(
                f"scale-{existing}", total=existing + SCALE_WARMUP + claims + 100
            )
            started = time.monotonic()
            seed.insert_existing_claims(template_id, existing)
            log(
                f"[scale] template {template_id}: {existing} existing claims inserted in"
                f" {time.monotonic() - started:.1f} s"
            )
            templates.append((existing, template_id, f"/api/coupons/{template_id}/claim"))
        seed.analyze_tables()

        def requests(path: str, count: int) -> list[tuple[str, str, str]]:
            users = self.users("scale", count, quiet=True)
            return [("POST", path, token) for _, token in users]

        warmups = {path: requests(path, SCALE_WARMUP) for _, _, path in templates}
        latencies: dict[tuple[str, str], list[float]] = {}
        seconds: dict[tuple[str, str], float] = {}
        statuses: dict[tuple[str, str], dict[str, int]] = {}
        modes = {"sequential": 1, "concurrent": sizes.scale_concurrency}
        for round_number in range(SCALE_ROUNDS):
            order = templates[round_number:] + templates[:round_number]
            for existing, _, path in order:
                for mode, concurrency in modes.items():
                    share = getattr(sizes, f"scale_{mode}") // SCALE_ROUNDS
                    summary = self.drive(
                        requests(path, share),
                        concurrency=concurrency,
                        warmup=warmups.pop(path, None),
                        keep_latencies=True,
                    )
                    key = (path, mode)
                    latencies.setdefault(key, []).extend(summary.pop("latencies_ms"))
                    seconds[key] = seconds.get(key, 0.0) + summary["seconds"]
                    for status, count in summary["statuses"].items():
                        statuses.setdefault(key, {})
                        statuses[key][status] = statuses[key].get(status, 0) + count
                    log(f"[scale {existing} round {round_number + 1} {mode}] {describe(summary)}")
        rows: list[dict[str, Any]] = []
        for existing, template_id, path in templates:
            figures = {}
            for mode, concurrency in modes.items():
                key = (path, mode)
                figures[mode] = {
                    **latency_figures(latencies[key], seconds[key]),
                    "concurrency": concurrency,
                    "statuses": statuses[key],
                }
            facts = seed.claim_facts(template_id)
            sent = sum(figures[mode]["requests"] for mode in modes)
            rows.append(
                {
                    "existing_claims": existing,
                    "template_id": template_id,
                    **figures,
                    "checks": {
                        **facts,
                        "all_201": all(
                            figures[mode]["statuses"] == {"201": figures[mode]["requests"]}
                            for mode in modes
                        ),
                        "exact": facts["rows"] == existing + SCALE_WARMUP + sent
                        and facts["claimed_count"] == existing + SCALE_WARMUP + sent,
                    },
                }
            )
            log(
                f"[scale {existing}] sequential p50 {figures['sequential']['p50_ms']} ms,"
                f" 16 connections p50 {figures['concurrent']['p50_ms']} ms"
            )
        self.results["scale"] = rows

    def reads(self) -> None:
        from bench import seed

        sizes = self.sizes
        have_list = self.route_exists("/api/coupons")
        have_mine = self.route_exists("/api/coupons/mine")
        if not (have_list or have_mine):
            log("[reads] GET /api/coupons and /api/coupons/mine are not in this tree: skipped")
            self.results["reads"] = {"skipped": "list and mine endpoints not available"}
            return
        (small_id, small_token), (heavy_id, heavy_token) = self.users("reader", 2)
        small_queries = {}
        if have_list:
            # Small data: one template on the page (an empty page skips the page query).
            seed.create_templates("list-small", 1, total=1_000, per_user_limit=1)
            small_queries["list"] = self.count_queries("/api/coupons", small_id)
        template_ids = seed.create_templates(
            "list", sizes.list_templates, total=1_000, per_user_limit=sizes.mine_per_template
        )
        seed.give_coupons(small_id, template_ids[:1], 1)
        held = seed.give_coupons(heavy_id, template_ids, sizes.mine_per_template)
        seed.analyze_tables()
        if have_mine:
            small_queries["mine"] = self.count_queries("/api/coupons/mine", small_id)
        log(f"[reads] {len(template_ids)} templates; reader holds {held} coupons")
        last_page = max(1, -(-held // 20))
        cases = []
        if have_list:
            cases.append(("list", "/api/coupons", "list"))
        if have_mine:
            cases.append(("mine_first", "/api/coupons/mine", "mine"))
            cases.append(("mine_last", f"/api/coupons/mine?page={last_page}", "mine"))
        reads: dict[str, Any] = {
            "templates": len(template_ids),
            "coupons_held": held,
            "page_size": 20,
            "last_page": last_page,
        }
        for name, path, family in cases:
            summary = self.drive(
                [("GET", path, heavy_token)] * sizes.read_requests,
                concurrency=1,
                warmup=[("GET", path, heavy_token)] * 10,
            )
            summary["queries"] = self.count_queries(path, heavy_id)
            summary["queries_small_data"] = small_queries[family]
            log(f"[reads {name}] {describe(summary)}; queries {summary['queries']}")
            reads[name] = summary
        self.results["reads"] = reads

    def count_queries(self, path: str, user_id: int) -> int:
        """SQL statements one request runs: the request is served in-process by Django's test
        client against the bench database under CaptureQueriesContext (after one warm-up
        request, so connection set-up is not counted). Authentication's user lookup counts."""
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext
        from rest_framework_simplejwt.tokens import AccessToken

        user = get_user_model().objects.get(pk=user_id)
        client = Client(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
        client.get(path)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} answered {response.status_code} in-process")
        return len(captured.captured_queries)

    def compare_worker_class(self, other: str) -> None:
        log(f"[compare] restarting gunicorn with {other} workers")
        self.start_app(other)
        primary = {k: self.results[k] for k in ("baseline", "storm") if k in self.results}
        compare: dict[str, Any] = {"worker_class": other}
        compare["baseline"] = self.baseline(key=f"compare_{other}_baseline")
        if self.claim_available():
            _, compare["storm"] = self.storm(f"compare_{other}_storm", redis_up=True)
        self.results.pop(f"compare_{other}_baseline", None)
        self.results.pop(f"compare_{other}_storm", None)
        compare["primary"] = {
            key: {"rps": value["rps"], "p50_ms": value["p50_ms"], "p99_ms": value["p99_ms"]}
            for key, value in primary.items()
        }
        self.results["worker_comparison"] = compare

    def wants(self, scenario: str) -> bool:
        return self.args.only is None or scenario in self.args.only

    def run(self) -> dict[str, Any]:
        self.setup()
        self.server_description = self.start_app(self.args.worker_class).description
        self.baseline()
        if self.claim_available():
            if self.wants("storm") or self.wants("sold_out"):
                template_id, _ = self.storm("storm", redis_up=True)
                if self.wants("sold_out"):
                    self.sold_out(template_id)
            if self.wants("redis_stopped"):
                log("[storm_redis_stopped] stopping the bench's redis-server")
                self.redis.stop()
                self.storm("storm_redis_stopped", redis_up=False)
                self.redis.start()
                log("[storm_redis_stopped] redis-server restarted")
            if self.wants("scale"):
                self.scale()
        else:
            log("POST /api/coupons/<id>/claim is not in this tree: claim scenarios skipped")
            self.results["claim"] = {"skipped": "claim endpoint not available"}
        if self.wants("reads"):
            self.reads()
        if self.wants("compare") and not self.args.no_compare:
            other = "sync" if self.args.worker_class == "gthread" else "gthread"
            self.compare_worker_class(other)
        return self.results


# --- Report -----------------------------------------------------------------------------------


def machine_facts(bench: Bench) -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    redis_version = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "mariadb": getattr(bench, "mariadb_version", "unknown"),
        "redis": redis_version,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small numbers, < 1 min")
    parser.add_argument("--worker-class", choices=["sync", "gthread"], default=DEFAULT_WORKER_CLASS)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="per gthread worker")
    parser.add_argument(
        "--no-compare", action="store_true", help="skip re-running under the other worker class"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the workers with py-spy during the storms and the sold-out run",
    )
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        help=f"comma-separated subset of: {', '.join(SCENARIOS)} (the baseline always runs)",
    )
    args = parser.parse_args(argv)
    if args.only and not args.only <= set(SCENARIOS):
        parser.error(f"--only takes a subset of: {', '.join(SCENARIOS)}")

    # SIGTERM (and SIGHUP) unwind like Ctrl-C, so the finally below and atexit stop the servers.
    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)

    from bench import report

    started_at = datetime.now(UTC)
    workdir = Path(tempfile.mkdtemp(prefix="coupons-bench-"))
    bench = Bench(args, workdir)
    try:
        results = bench.run()
    except BaseException:
        log(f"FAILED; server logs kept in {workdir}")
        raise
    finally:
        bench.stop_all()
    elapsed = (datetime.now(UTC) - started_at).total_seconds()
    document = {
        "started_at": started_at.isoformat(timespec="seconds"),
        "seconds": round(elapsed, 1),
        "command": "python -m bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "mode": "quick" if args.quick else "full",
        "sizes": asdict(bench.sizes),
        "machine": machine_facts(bench),
        "server": {
            "gunicorn": bench.server_description,
            "primary_worker_class": args.worker_class,
            "settings": "config.settings.production",
        },
        "results": results,
    }
    document["targets"] = report.evaluate_targets(results)
    print(report.render(document))
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{bench.stamp}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    log(f"done in {elapsed:.0f} s; figures written to {path.relative_to(REPO_ROOT)}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
