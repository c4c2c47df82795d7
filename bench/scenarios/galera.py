"""The selling phase again, through HAProxy and a 3-node Galera cluster (SPEC section 22),
beside the single node's row of the same run: the same sizes, the same Redis, a second
an app server whose DATABASE_URL is HAProxy's writer port (localservers/galera).

The cluster has its own copy of the schema (migrated here); this process's Django points at
it for the row's seeding and read-back, then back at the single node. Its templates are
numbered from GALERA_FIRST_ID so that their Redis keys never meet the single node's. The
row's database CPU and counters are the writer's (node 1); the other two nodes apply the
write sets on the same cores. Skipped, with a line saying why, when the cluster cannot start
(BENCH_GALERA=0 skips it on purpose)."""

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import dj_database_url
import MySQLdb

from bench.harness import DATABASE_NAME, REPO_ROOT, Harness, recreate_database
from bench.processes import AppServer
from bench.progress import log
from bench.results import ClaimRow
from bench.scenarios.claims import claim_path, measure
from localservers import galera
from localservers.mariadb_server import MariaDBServer
from localservers.ports import free_port

GALERA_FIRST_ID = 1_000_000


class WriterNode:
    """What the harness's meters ask of its database server, answered by node 1."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster

    @property
    def process(self) -> SimpleNamespace:
        record = self.cluster.process(1)
        return SimpleNamespace(pid=record.pid if record else None)

    def connect(self) -> MySQLdb.Connection:
        return self.cluster.connect(1)


@contextmanager
def django_database_at(url: str) -> Iterator[None]:
    """This process's connections (default, decision) at `url` for the block."""
    from django.db import connections

    server = dj_database_url.parse(url)
    keys = ("HOST", "PORT", "NAME")
    connections.close_all()
    saved = {
        alias: {key: connections.settings[alias][key] for key in keys} for alias in connections
    }
    for alias in connections:
        connections.settings[alias].update({key: server[key] for key in keys})  # type: ignore[literal-required]
    try:
        yield
    finally:
        connections.close_all()
        for alias, values in saved.items():
            connections.settings[alias].update(values)


def start_cluster(directory: Path):
    """The cluster, or None (and why) when it cannot run here."""
    if os.environ.get("BENCH_GALERA", "1") == "0":
        log("[galera] skipped: BENCH_GALERA=0")
        return None
    try:
        log(f"[galera] starting 3 Galera nodes and HAProxy (data in {directory})")
        return galera.start(directory, galera.free_base_port())
    except Exception as error:  # missing packages, a node that will not start: no row
        log(f"[galera] skipped: the cluster did not start ({error}); see scripts/cluster")
        return None


def run(harness: Harness, *, server: str) -> ClaimRow | None:
    from django.core.management import call_command
    from django.db import connection

    from bench import seed
    from coupons.models import CouponTemplate

    directory = harness.workdir / "galera"
    cluster = start_cluster(directory)
    if cluster is None:
        return None
    url = cluster.haproxy_url(DATABASE_NAME)
    app_server: AppServer | None = None
    through = copy.copy(harness)  # the same harness, its app and database swapped
    try:
        recreate_database(url)
        with django_database_at(url):
            call_command("migrate", interactive=False, verbosity=0)
            with connection.cursor() as cursor:
                table = CouponTemplate._meta.db_table
                cursor.execute(f"ALTER TABLE {table} AUTO_INCREMENT = {GALERA_FIRST_ID}")
            sizes = harness.sizes
            total = 2 * (sizes.selling_warmup + sizes.selling_requests)
            template_id = seed.create_template("selling-galera", total=total)
            warmup = [u.token for u in through.users("galera-warmup", sizes.selling_warmup)]
            tokens = [u.token for u in through.users("galera", sizes.selling_requests)]
            app_server = AppServer(
                port=free_port(),
                workers=os.cpu_count() or 1,
                server=server,
                threads=harness.threads,
                env={**harness.env, "DATABASE_URL": url},
                log_dir=directory,
                cwd=REPO_ROOT,
            )
            app_server.start()
            through.app_server = app_server
            through.mariadb = cast(MariaDBServer, WriterNode(cluster))
            through._status_connection = None
            log(
                f"[galera] {len(warmup)} warm-up claims, then {len(tokens)} new users claim"
                f" template {template_id} through HAProxy at c={sizes.concurrency}"
            )
            through.warm_up("POST", claim_path(template_id), warmup, requests=len(warmup))
            return measure(
                through,
                "selling_galera",
                template_id=template_id,
                tokens=tokens,
                rows_before=len(warmup),
                expected_201=len(tokens),
                redis_up=True,
            )
    except Exception as error:  # the row is lost, not the run: the other rows still print
        log(f"[galera] FAILED, no row: {error!r}; logs in {directory}")
        return None
    finally:
        if app_server is not None:
            app_server.stop()
        if through._status_connection is not None and through._status_connection is not (
            harness._status_connection
        ):
            through._status_connection.close()
        cluster.stop()
