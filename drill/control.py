"""The negative control (SPEC section 22): the drill's ledger and checks on the failover that
loses acknowledged claims. A primary mariadbd with a binary log and an asynchronous replica
that lags (MASTER_DELAY: it has the events, it has not applied them); claims are acknowledged
by the primary, the primary is SIGKILLed, the replica is promoted and the app pointed at it.
The same checks must report the loss: acknowledged 201s without their rows."""

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from drill.app import DrillApp
from drill.checks import Check, all_checks
from drill.ledger import Ledger
from drill.load import Load
from localservers.mariadb_server import MariaDBServer

DATABASE = "coupons_control"
LAG_SECONDS = 3600


def binlog_mariadb(directory: Path, server_id: int) -> MariaDBServer:
    """A small mariadbd with a binary log (the primary) or a relay log (the replica) and its
    own server id; two of them run at once."""
    return MariaDBServer(
        directory,
        options=(
            f"--server-id={server_id}", f"--log-bin={directory / 'binlog'}",
            f"--relay-log={directory / 'relay'}", "--binlog-format=ROW",
            "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
        ),
    )  # fmt: skip


@dataclass
class ControlResult:
    checks: list[Check]
    ledger: Ledger

    def check(self, name: str) -> Check:
        return next(check for check in self.checks if check.name == name)


def replica_caught_up(primary: MariaDBServer, replica: MariaDBServer, timeout: float = 60):
    (position,) = primary.execute("SELECT @@gtid_binlog_pos")[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if replica.execute("SELECT @@gtid_slave_pos")[0][0] == position:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the replica did not reach {position} in {timeout:g} s")


def run_control(work_dir: Path, *, load_seconds: float = 4.0) -> ControlResult:
    # Fresh servers each run: a primary left by the last run would hold its database and
    # the replica its position (a second `make drill` failed on "database exists").
    shutil.rmtree(work_dir, ignore_errors=True)
    primary = binlog_mariadb(work_dir / "primary", server_id=1)
    replica = binlog_mariadb(work_dir / "replica", server_id=2)
    app = DrillApp(work_dir / "app", primary.url(DATABASE))
    loads: list[Load] = []
    try:
        for server in (primary, replica):
            server.start()
        replica.execute(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port},"
            " MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos",
            "START SLAVE",
        )
        primary.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4")
        seed = app.prepare(users=12)
        replica_caught_up(primary, replica)
        # From here the replica receives every event and applies none for an hour.
        replica.execute("STOP SLAVE", f"CHANGE MASTER TO MASTER_DELAY={LAG_SECONDS}", "START SLAVE")
        app.start()
        ledger = Ledger()
        load = Load(app.port, seed, ledger, storms=2, shoppers=1).start()
        loads.append(load)
        time.sleep(load_seconds)
        kill = ledger.kill("primary", time.monotonic())
        primary.kill()
        time.sleep(1)
        load.stop()
        # The hurried promotion: stop replicating, forget the primary, take writes.
        replica.execute("STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
        app.repoint(replica.url(DATABASE))
        load = Load(app.port, seed, ledger, storms=2, shoppers=1).start()
        loads.append(load)
        time.sleep(2)
        load.stop()
        kill.recovered_in = ledger.first_claim_after(kill.at)
        connection = replica.connect()
        connection.select_db(DATABASE)
        try:
            checks = all_checks(
                connection,
                ledger,
                templates=list(seed.templates.values()),
                products=seed.products,
                stock=seed.stock,
            )
        finally:
            connection.close()
        return ControlResult(checks=checks, ledger=ledger)
    finally:
        for load in loads:
            load.stop()
        app.stop()
        primary.stop(timeout=30)
        replica.stop(timeout=30)
