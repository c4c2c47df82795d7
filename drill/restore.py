"""`make restore-drill` (SPEC section 29): docs/operations.md's backup and restore, tried.
A 3-node cluster serves claims; node 3 is backed up with mariadb-backup while they go on, and
the claims go on until the scarce template is sold out; then the copy is restored into a new
cluster (the documented steps: a grastate.dat with the copy's position, a bootstrap from it,
two nodes joined by SST) and the same app, with the Redis that outlived the copy and the
scheduler beside it, serves from it. Checks: the app serves at once, every claim acknowledged
before the backup began is there, the counts match the rows, and the counts the copy lost
refuse no claim for longer than the restore watch takes to see them. Exit 1 on a failure."""

import argparse
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from drill.app import REPO, DrillApp
from drill.checks import Check, counts_and_limits, rows
from drill.client import Attempt, send
from drill.ledger import Ledger
from drill.load import Load
from drill.run import DATABASE, fresh_database, log, wait_all_synced
from localservers.galera import WRITER_NODE, Cluster, free_base_port, start

SCARCE_TOTAL = 400
SOLD_OUT_WAIT = 120.0  # seconds the claims may take to sell the scarce template out after
# Seconds a count the copy lost may refuse claims after the app serves: the scheduler's start
# (about 2 s of Django on this machine) and its restore watch (each second).
STALE_REFUSAL_LIMIT = 5.0
BACKED_UP_NODE = 3


def backup_node(cluster: Cluster, node: int, target: Path) -> tuple[str, int]:
    """The operations guide's backup of a backup node: desynced, mariadb-backup --galera-info,
    prepared. Returns the copy's cluster position (uuid, seqno)."""
    connection = cluster.connect(node)
    try:
        connection.cursor().execute("SET GLOBAL wsrep_desync = ON")
        subprocess.run(
            [
                "mariadb-backup", f"--defaults-file={cluster.node_dir(node) / 'my.cnf'}",
                "--backup", "--galera-info", f"--target-dir={target}", "--user=root",
                f"--socket={cluster.node_dir(node) / 'mariadbd.sock'}",
            ],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    finally:
        connection.cursor().execute("SET GLOBAL wsrep_desync = OFF")
        connection.close()
    subprocess.run(
        ["mariadb-backup", "--prepare", f"--target-dir={target}"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    uuid, seqno = (target / "xtrabackup_galera_info").read_text().split()[0].rsplit(":", 1)
    return uuid, int(seqno)


def restored_cluster(
    base_dir: Path, base_port: int, copy: Path, position: tuple[str, int]
) -> Cluster:
    """A new cluster from a prepared copy, as docs/operations.md restores one: the copy as the
    writer node's data directory with a grastate.dat of its position, safe to bootstrap; the
    other two start empty and take the data by SST."""
    cluster = Cluster(base_dir, base_port)
    datadir = cluster.node_dir(WRITER_NODE) / "data"
    datadir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(copy, datadir)
    uuid, seqno = position
    (datadir / "grastate.dat").write_text(
        f"# GALERA saved state\nversion: 2.1\nuuid:    {uuid}\nseqno:   {seqno}\n"
        "safe_to_bootstrap: 1\n"
    )
    return cluster.start()


def sold_out(cluster: Cluster, template: int) -> bool:
    connection = cluster.connect(database=DATABASE)
    try:
        ((claimed, total),) = rows(
            connection,
            "SELECT claimed_count, total FROM coupon_templates WHERE id = %s",
            [template],
        )
    finally:
        connection.close()
    return claimed >= total


def claims_of_before(ledger: Ledger, moment: float) -> list[Attempt]:
    """The claims answered 201 before `moment`: the copy must hold each."""
    return [
        a
        for a in ledger.snapshot()
        if a.kind == "claim" and a.status == 201 and a.finished < moment
    ]


def run_restore_drill(work_dir: Path, *, watch: bool = True) -> list[Check]:
    """The drill; with `watch` False the scheduler (and its restore watch) is not started: the
    negative control, whose lost counts must be seen refusing claims."""
    source = start(work_dir / "source", free_base_port())
    app = None
    try:
        fresh_database(source)
        app = DrillApp(
            work_dir / "app", source.haproxy_url(DATABASE), replica_url=source.reader_url(DATABASE)
        )
        seed = app.prepare(scarce_total=SCARCE_TOTAL)
        app.start()
        ledger = Ledger()
        load = Load(app.port, seed, ledger).start()
        time.sleep(3)
        backup_began = time.monotonic()
        log("backing up node 3 under claims")
        position = backup_node(source, BACKED_UP_NODE, work_dir / "backup")
        acknowledged = claims_of_before(ledger, backup_began)
        deadline = time.monotonic() + SOLD_OUT_WAIT
        while not sold_out(source, seed.templates["scarce"]) and time.monotonic() < deadline:
            time.sleep(0.5)
        load.stop()
        sold_out_on_source = sold_out(source, seed.templates["scarce"])
        log(f"copy at seqno {position[1]}; {len(acknowledged)} claims acknowledged before it; "
            f"scarce sold out on the source: {sold_out_on_source}")  # fmt: skip
        app.stop_server()  # Redis stays, with what the source's claims taught it
        source.stop()
        log("restoring the copy into a new cluster")
        restored = restored_cluster(
            work_dir / "restored", free_base_port(), work_dir / "backup", position
        )
        wait_all_synced(restored)
        app.database_url = restored.haproxy_url(DATABASE)
        app.replica_url = restored.reader_url(DATABASE)
        app.start()
        served_at = time.monotonic()
        first = serves_at_once(app, seed)
        if watch:
            app.start_scheduler()  # its restore watch runs at its start, then every second
        lost = lost_counts_refuse_briefly(app, seed, since=served_at, exercised=sold_out_on_source)
        checks = [first, *after_restore(restored, seed, acknowledged), lost]
        restored.stop()
        return checks
    finally:
        if app is not None:
            app.stop()
        source.stop()


def claim(app: DrillApp, user: tuple[int, str], template: int) -> Attempt:
    user_id, token = user
    attempt, _body = send(
        app.port,
        kind="claim",
        user_id=user_id,
        token=token,
        key=uuid.uuid4().hex,
        path=f"/api/coupons/{template}/claim",
    )
    return attempt


def serves_at_once(app: DrillApp, seed) -> Check:
    """The first claim after the restored app answered its health check is a 201."""
    first = claim(app, seed.users[0], seed.templates["open"])
    return Check(
        "the restored app serves at once",
        first.status == 201,
        f"first claim after the start: {first.status} {first.code or ''}".strip(),
    )


def after_restore(cluster: Cluster, seed, acknowledged: list[Attempt]) -> list[Check]:
    connection = cluster.connect(database=DATABASE)
    try:
        ids = [a.resource_id for a in acknowledged if a.resource_id is not None]
        found = {
            coupon_id
            for (coupon_id,) in rows(
                connection,
                f"SELECT id FROM user_coupons WHERE id IN ({','.join(map(str, ids)) or 'NULL'})",
            )
        }
        missing = [coupon_id for coupon_id in ids if coupon_id not in found]
        present = Check(
            "every claim acknowledged before the backup is in the copy",
            bool(ids) and not missing,
            f"{len(ids)} acknowledged, {len(missing)} missing"
            + (f": {missing[:5]}" if missing else ""),
        )
        return [present, *counts_and_limits(connection, list(seed.templates.values()))]
    finally:
        connection.close()


def lost_counts_refuse_briefly(app: DrillApp, seed, *, since: float, exercised: bool) -> Check:
    """The copy has room on the scarce template that Redis, taught by the source, counts as
    gone (counts in Redis only rise until the restore watch resets them). Claims of it every
    0.1 s for STALE_REFUSAL_LIMIT + 2 s: none may be refused as sold out past the limit, and
    one must win after it."""
    name = "counts the copy lost refuse claims only until the restore is seen"
    if not exercised:
        return Check(name, False, "not exercised: the scarce template never sold out")
    answers: list[tuple[float, int, str | None]] = []
    while time.monotonic() - since < STALE_REFUSAL_LIMIT + 2:
        user = seed.users[len(answers) % len(seed.users)]
        answer = claim(app, user, seed.templates["scarce"])
        answers.append((time.monotonic() - since, answer.status, answer.code))
        time.sleep(0.1)
    refused = [at for at, _status, code in answers if code == "sold_out"]
    won_late = [at for at, status, _code in answers if status == 201 and at > STALE_REFUSAL_LIMIT]
    last = f"the last {max(refused):.2f} s after the start" if refused else "none"
    return Check(
        name,
        all(at <= STALE_REFUSAL_LIMIT for at in refused) and bool(won_late),
        f"{len(answers)} claims: {len(refused)} refused as sold out ({last}), "
        f"{sum(status == 201 for _, status, _ in answers)} won",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make restore-drill", description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=REPO / "var" / "restore-drill")
    parser.add_argument(
        "--without-watch",
        action="store_true",
        help="the negative control: no scheduler, so the lost counts must fail the last check",
    )
    args = parser.parse_args(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    checks = run_restore_drill(args.work_dir, watch=not args.without_watch)
    for check in checks:
        print(f"{'PASS' if check.passed else 'FAIL'}  {check.name}: {check.detail}")
    failed = not all(check.passed for check in checks)
    print(f"restore drill: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
