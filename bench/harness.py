"""What every scenario shares: the sizes of a run, the bench's own mariadbd, redis-server and
the app server, fresh users with tokens, the two ways to send load (wrk for throughput, the aiohttp
process for pooled latencies), CPU metering, profiling and reading back a template's facts."""

import os
import secrets
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import dj_database_url
import MySQLdb

from bench import load, profiling, work, wrk
from bench.cpu import CpuMeter
from bench.processes import AppServer
from bench.progress import log
from bench.results import ClaimFacts, CpuShare, Load, Sizes
from localservers.mariadb_server import LIKE_THE_SHARED_SERVER, MariaDBServer
from localservers.ports import free_port
from localservers.redis_server import RedisServer

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATABASE_NAME = "coupons_bench"


FULL = Sizes(
    baseline_requests=10_000,
    baseline_warmup=1_000,
    concurrency=64,
    selling_requests=5_000,
    selling_warmup=500,
    storm_users=5_000,
    storm_total=1_000,
    sold_out_requests=5_000,
    scale_existing=(0, 100_000, 1_000_000),
    scale_sequential=300,
    scale_concurrent=2_100,
    scale_concurrency=16,
    list_templates=1_000,
    mine_per_template=10,  # 10 x 1,000 templates = 10,000 coupons for one user
    read_requests=300,
    hot_row_seconds=5.0,
    staff_job_rows=100_000,
)
QUICK = Sizes(
    baseline_requests=1_000,
    baseline_warmup=200,
    concurrency=64,
    selling_requests=500,
    selling_warmup=100,
    storm_users=500,
    storm_total=100,
    sold_out_requests=500,
    scale_existing=(0, 1_000, 10_000),
    scale_sequential=60,
    scale_concurrent=240,
    scale_concurrency=16,
    list_templates=1_000,
    mine_per_template=10,
    read_requests=50,
    hot_row_seconds=1.0,
    staff_job_rows=2_000,
)


@dataclass(frozen=True)
class User:
    id: int
    token: str


def configure_environment(database_url: str, redis_url: str) -> dict[str, str]:
    """The settings both this process and the app server run with: production settings, the bench
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
            "BENCH_BARE_VIEW": "1",  # GET /bench/bare, the bare DRF row (api/bare.py)
        }
    )
    return dict(os.environ)


def recreate_database(database_url: str) -> str:
    """Drop and create the bench database; return the server's version."""
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


class Harness:
    def __init__(self, *, sizes: Sizes, workdir: Path, threads: int, profile: bool):
        self.sizes = sizes
        self.workdir = workdir
        self.threads = threads
        self.profile = profile
        # The bench's own database server: its counters count this run's statements alone.
        self.mariadb = MariaDBServer(workdir / "mariadb", options=LIKE_THE_SHARED_SERVER)
        self.database_url = self.mariadb.url(DATABASE_NAME)
        self.redis = RedisServer(workdir / "redis")
        self.env = configure_environment(self.database_url, self.redis.url)
        self.app_port = free_port()
        self.app_server: AppServer | None = None
        self.mariadb_version = "unknown"
        self.stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self._user_batches = 0
        self._status_connection: MySQLdb.Connection | None = None

    # servers

    def setup(self) -> None:
        log(f"starting mariadbd on port {self.mariadb.port} (data in {self.mariadb.datadir})")
        self.mariadb.start()
        self.mariadb_version = recreate_database(self.database_url)
        import django

        # Whitenoise warns that STATIC_ROOT is empty; the benchmark serves no static files.
        warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        log(f"migrated; starting redis-server on port {self.redis.port}")
        self.redis.start()

    def start_app(self, server: str) -> AppServer:
        """(Re)start the app under `server` (bench.processes.SERVERS)."""
        if self.app_server is not None:
            self.app_server.stop()
        self.app_server = AppServer(
            port=self.app_port,
            workers=os.cpu_count() or 1,
            server=server,
            threads=self.threads,
            env=self.env,
            log_dir=self.workdir,
            cwd=REPO_ROOT,
        )
        self.app_server.start()
        return self.app_server

    def stop_all(self) -> None:
        if self.app_server is not None:
            self.app_server.stop()
        self.redis.stop()
        if self._status_connection is not None:
            self._status_connection.close()
            self._status_connection = None
        from django.db import connections

        connections.close_all()  # before the server goes away
        self.mariadb.stop()

    @property
    def base_url(self) -> str:
        assert self.app_server is not None
        return self.app_server.base_url

    # data

    def users(self, label: str, count: int, *, quiet: bool = False) -> list[User]:
        """`count` fresh users with access tokens, created in bulk in-process."""
        from bench import seed

        self._user_batches += 1
        started = time.monotonic()
        users = [
            User(id=user_id, token=token)
            for user_id, token in seed.create_users(f"{label}-{self._user_batches}", count)
        ]
        if not quiet:
            log(
                f"created {count} users '{label}' with tokens in {time.monotonic() - started:.1f} s"
            )
        return users

    def claim_facts(self, template_id: int, *, read_redis: bool) -> ClaimFacts:
        from bench import seed

        facts = seed.claim_facts(template_id)
        counter = None
        if read_redis:
            raw = self.redis.client().get(seed.redis_claimed_key(template_id))
            counter = None if raw is None else int(raw)
        return ClaimFacts(**facts, redis_counter=counter)

    # load

    def warm_up(self, method: str, path: str, tokens: Sequence[str], *, requests: int) -> None:
        """Requests through wrk that are not measured (their effects still count)."""
        wrk.run(
            self.base_url + path,
            method=method,
            tokens=tokens,
            requests=requests,
            concurrency=self.sizes.concurrency,
            workdir=self.workdir,
        )

    def throughput(self, method: str, path: str, tokens: Sequence[str], *, requests: int) -> Load:
        """A throughput row through wrk at the run's concurrency, request i carrying
        tokens[i % len(tokens)], with the CPU each party used meanwhile."""
        return self.metered(
            lambda: wrk.run(
                self.base_url + path,
                method=method,
                tokens=tokens,
                requests=requests,
                concurrency=self.sizes.concurrency,
                workdir=self.workdir,
            )
        )

    def latency_run(
        self,
        requests: list[load.Request],
        *,
        concurrency: int,
        warmup: list[load.Request] | None = None,
    ) -> dict:
        """One run of the aiohttp load process; raw output, for `load.to_load`."""
        return load.run(self.base_url, requests, concurrency=concurrency, warmup=warmup)

    def metered(self, send: Callable[[], Load]) -> Load:
        """Run `send()` (returning a Load) and attach the CPU cores each party used meanwhile
        and the work the database and Redis did per answered request (bench.work)."""
        counters_before = self.server_counters()
        result, cpu = self.cores_during(send)
        done = work.per_request(counters_before, self.server_counters(), requests=result.answered)
        return replace(result, work=done, cpu=cpu)

    def cores_during(self, action: Callable[[], T]) -> tuple[T, CpuShare | None]:
        """Run `action()`; its result and the CPU cores each party used meanwhile (the load
        generator: the waited-for child processes, wrk or a script)."""
        assert self.app_server is not None and self.app_server.process is not None
        meter = CpuMeter(
            app_master=self.app_server.process.pid,
            redis_pid=self.redis.process.pid if self.redis.process else None,
            mariadb_pid=self.mariadb.process.pid if self.mariadb.process else None,
        )
        before, started = meter.snapshot(), time.monotonic()
        result = action()
        cores = meter.cores(before, meter.snapshot(), time.monotonic() - started)
        return result, CpuShare(**cores) if cores else None

    def server_counters(self) -> work.ServerCounters:
        if self._status_connection is None:
            self._status_connection = self.mariadb.connect()
            self._status_connection.autocommit(True)
        redis_client = self.redis.client() if self.redis.running else None
        return work.read_counters(self._status_connection, redis_client)

    @contextmanager
    def profiled(self, scenario: str) -> Iterator[profiling.ProfileSlot]:
        """With --profile, py-spy samples the workers while the block runs; the summary lands
        in the yielded slot's `profile`."""
        into = profiling.ProfileSlot()
        if not self.profile or self.app_server is None or self.app_server.process is None:
            yield into
            return
        RESULTS_DIR.mkdir(exist_ok=True)
        output = RESULTS_DIR / f"{self.stamp}-{scenario}.speedscope.json"
        with profiling.profiled(self.app_server.process.pid, output, into):
            yield into
