"""`make drill` (SPEC section 22): the app as shipped (its server and the one-second watches)
through HAProxy on a 3-node Galera cluster of its own with its supervisor running, under load,
while nodes fail: the writer SIGKILLed KILLS times, backups killed, the writer frozen, the
writer and a backup killed at once, every node killed at once. Each fault waits for the
claims to succeed again, judged against its promise, then for the supervisor to bring every
node back Synced before the next (the drill restarts nothing itself). Then the ledger's
checks and the negative control. Prints a table; exits 1 on any violation or when the
control's loss went unseen. `python -m drill.run --help`."""

import argparse
import random
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import MySQLdb

from drill.app import REPO, DrillApp
from drill.checks import (
    Check,
    all_checks,
    reads_see_writes,
    recovery,
    writer_moves_follow_faults,
)
from drill.control import run_control
from drill.ledger import HEAL_LIMIT, RECOVERY_LIMIT, Kill, Ledger, WriterMove
from drill.load import Load
from drill.report import table
from localservers.galera import NODES, WRITER_NODE, Cluster, free_base_port, start

DATABASE = "coupons_drill"
RECOVERY_WAIT = 15.0  # seconds a fault of one node waits for a 201 claim before going on
FREEZE_SECONDS = 10.0  # how long a frozen writer stays stopped (SIGSTOP, then SIGCONT)
# How long the supervisor may take to bring every node back Synced after a fault.
HEALED_WITHIN = 240.0
LOSS_CHECK = "every 201 claim has its row"


@dataclass
class DrillResult:
    checks: list[Check]
    ledger: Ledger
    final_pass: int

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


def log(message: str) -> None:
    print(f"[drill {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fresh_database(cluster: Cluster, timeout: float = 60) -> None:
    """An empty drill database, through HAProxy (again while a loaded machine's health checks
    still flap after the start)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection = cluster.connect()
            break
        except MySQLdb.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
            cursor.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4")
    finally:
        connection.close()


# How long every node must stay in one full primary component before the next fault: a
# fault that meets a two-node view (a thawed node not yet back in it) takes the majority.
STABLE_FOR = 2.0


def wait_all_synced(cluster: Cluster, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    stable_since: float | None = None
    while time.monotonic() < deadline:
        if cluster.fully_joined() and cluster.writer() is not None:
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since >= STABLE_FOR:
                return
        else:
            stable_since = None
        time.sleep(0.25)
    raise RuntimeError(f"the cluster was not whole and Synced within {timeout:g} s")


class WriterWatch:
    """Polls which node HAProxy writes to, every WATCH_INTERVAL, and notes each change in the
    ledger (readings with no writer are skipped: a move is from one node to another)."""

    WATCH_INTERVAL = 0.25

    def __init__(self, cluster: Cluster, ledger: Ledger) -> None:
        self.cluster, self.ledger = cluster, ledger
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.watch, name="writer-watch", daemon=True)

    def start(self) -> "WriterWatch":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def watch(self) -> None:
        last = self.cluster.writer()
        while not self.stopping.wait(self.WATCH_INTERVAL):
            writer = self.cluster.writer()
            if writer is not None and last is not None and writer != last:
                self.ledger.moves.append(WriterMove(time.monotonic(), last, writer))
            last = writer if writer is not None else last


def claims_again(ledger: Ledger, fault: Kill, *, wait: float) -> str:
    """Wait up to `wait` s for a 201 claim sent after the fault; note and show how long."""
    deadline = fault.at + wait
    while time.monotonic() < deadline and ledger.first_claim_after(fault.at) is None:
        time.sleep(0.1)
    fault.recovered_in = ledger.first_claim_after(fault.at)
    return "none" if fault.recovered_in is None else f"{fault.recovered_in:.2f} s"


# How long the drill asks for the writer before a fault before it gives up: the question goes
# through HAProxy on a fresh connection, which on a loaded machine may find none for a moment
# (a connect over its 2 s, a check between two states) after the last fault has healed.
WRITER_WAIT = 15.0


def current_writer(cluster: Cluster) -> int:
    """The node HAProxy writes to, asked again for up to WRITER_WAIT seconds. A precondition
    of the next fault, not a measurement: claims meanwhile are in the ledger as always."""
    deadline = time.monotonic() + WRITER_WAIT
    while (writer := cluster.writer()) is None:
        if time.monotonic() >= deadline:
            raise RuntimeError(f"no writer before a fault for {WRITER_WAIT:.0f} s")
        time.sleep(0.5)
    return writer


def kill_writer(cluster: Cluster, ledger: Ledger, number: int) -> None:
    """SIGKILL the node HAProxy writes to, wait for a 201 claim, then for the supervisor to
    bring it back Synced."""
    writer = current_writer(cluster)
    kill = ledger.kill(f"node{writer}", time.monotonic())
    cluster.kill(writer)
    shown = claims_again(ledger, kill, wait=RECOVERY_WAIT)
    log(f"kill {number}: node{writer}, claims again after {shown}")
    wait_all_synced(cluster, timeout=HEALED_WITHIN)


def kill_backup(cluster: Cluster, ledger: Ledger, number: int) -> None:
    """SIGKILL a node HAProxy does not write to: claims must go on (its eviction reconfigures
    the cluster under them)."""
    writer = current_writer(cluster)
    backup = next(node for node in NODES if node != writer)
    kill = ledger.kill(f"node{backup}", time.monotonic(), fault="backup kill")
    cluster.kill(backup)
    shown = claims_again(ledger, kill, wait=RECOVERY_WAIT)
    log(f"backup kill {number}: node{backup}, claims again after {shown}")
    wait_all_synced(cluster, timeout=HEALED_WITHIN)


def kill_together(cluster: Cluster, ledger: Ledger, nodes: list[int], fault: str) -> None:
    """SIGKILL `nodes` at once (two: the survivor is out of quorum; all: a crash): the
    supervisor heals it without a human, claims within HEAL_LIMIT."""
    named = "all" if len(nodes) == len(NODES) else "+".join(f"node{node}" for node in nodes)
    kill = ledger.kill(named, time.monotonic(), fault=fault, bound=HEAL_LIMIT)
    for node in nodes:
        cluster.kill(node)
    shown = claims_again(ledger, kill, wait=HEAL_LIMIT + RECOVERY_WAIT)
    log(f"{fault}: {named}, claims again after {shown}")
    wait_all_synced(cluster, timeout=HEALED_WITHIN)


def freeze_writer(cluster: Cluster, ledger: Ledger, number: int) -> None:
    """SIGSTOP the node HAProxy writes to for FREEZE_SECONDS, then SIGCONT: claims must come
    back within the bound of the freeze and again of the thaw (the node rejoins, and the
    writer may move back to it), then every node is Synced before the next fault."""
    writer = current_writer(cluster)
    freeze = ledger.kill(f"node{writer}", time.monotonic(), fault="freeze")
    cluster.freeze(writer)
    try:
        shown = claims_again(ledger, freeze, wait=FREEZE_SECONDS)
        time.sleep(max(0.0, freeze.at + FREEZE_SECONDS - time.monotonic()))
    finally:
        thaw = ledger.kill(f"node{writer}", time.monotonic(), fault="thaw")
        cluster.thaw(writer)
    thawed = claims_again(ledger, thaw, wait=RECOVERY_WAIT)
    log(f"freeze {number}: node{writer}, claims again after {shown}; after the thaw {thawed}")
    wait_all_synced(cluster)


def run_drill(
    cluster: Cluster,
    work_dir: Path,
    *,
    kills: int,
    freezes: int = 2,
    backup_kills: int = 4,
    losses_together: bool = True,
    between: tuple[float, float] = (1.0, 3.0),
    storms: int = 4,
    shoppers: int = 2,
) -> DrillResult:
    """The drill on a running cluster, its supervisor started: `kills` SIGKILLs of the writer
    with `freezes` freezes and `backup_kills` kills of a backup spread among them, then (with
    `losses_together`) the writer and a backup killed at once, then every node; the cluster
    is left running."""
    fresh_database(cluster)
    app = DrillApp(
        work_dir / "app",
        cluster.haproxy_url(DATABASE),
        replica_url=cluster.reader_url(DATABASE),
    )
    load: Load | None = None
    watch: WriterWatch | None = None
    try:
        seed = app.prepare()
        app.start()
        app.start_scheduler()
        cluster.start_supervisor()
        ledger = Ledger()
        load = Load(app.port, seed, ledger, storms=storms, shoppers=shoppers).start()
        watch = WriterWatch(cluster, ledger).start()
        pause = random.Random(23)
        # Freezes and backup kills after evenly spaced kills, each after a Synced cluster.
        freeze_after = {round((kills * (n + 1)) / (freezes + 1)) for n in range(freezes)}
        backup_after = {round((kills * (n + 0.5)) / backup_kills) for n in range(backup_kills)}
        frozen = backups = 0
        for number in range(1, kills + 1):
            time.sleep(pause.uniform(*between))
            kill_writer(cluster, ledger, number)
            if number in freeze_after:
                frozen += 1
                time.sleep(pause.uniform(*between))
                freeze_writer(cluster, ledger, frozen)
            if number in backup_after:
                backups += 1
                time.sleep(pause.uniform(*between))
                kill_backup(cluster, ledger, backups)
        if losses_together:
            time.sleep(pause.uniform(*between))
            writer = current_writer(cluster)
            backup = next(node for node in NODES if node != writer)
            kill_together(cluster, ledger, [writer, backup], "double kill")
            time.sleep(pause.uniform(*between))
            kill_together(cluster, ledger, list(NODES), "crash")
        time.sleep(between[1])
        watch.stop()
        load.stop()
        if load.failures:
            raise RuntimeError(f"the drill's clients failed: {load.failures[0]!r}")
        retried = load.final_pass()
        log(f"final pass: {retried} keys sent again; checking the ledger")
        ledger.dump(work_dir / "ledger.jsonl")
        wait_all_synced(cluster)
        connection = cluster.connect(database=DATABASE)
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
        moves = writer_moves_follow_faults(ledger, writer_node=WRITER_NODE)
        lived = app.scheduler is not None and app.scheduler.running
        scheduler = Check(
            "the scheduler lived through every fault",
            lived,
            "running" if lived else f"exited: {app.scheduler.log_tail() if app.scheduler else ''}",
        )
        reads = reads_see_writes(ledger)
        return DrillResult([*checks, recovery(ledger), moves, reads, scheduler], ledger, retried)
    finally:
        cluster.stop_supervisor()
        if watch is not None:
            watch.stop()
        if load is not None:
            load.stop()
        app.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make drill", description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs of the writer (20)")
    parser.add_argument(
        "--freezes", type=int, default=2, help="freezes of the writer, SIGSTOP 10 s (2)"
    )
    parser.add_argument("--backup-kills", type=int, default=4, help="SIGKILLs of a backup (4)")
    parser.add_argument("--work-dir", type=Path, default=REPO / "var" / "drill")
    parser.add_argument("--no-control", action="store_true", help="skip the negative control")
    args = parser.parse_args(argv)
    log(f"starting a 3-node cluster under {args.work_dir / 'cluster'}")
    # A new cluster each run: one a stopped run left behind may be crashed mid-fault, and
    # each run measures from the same start.
    base_port = free_base_port()
    Cluster(args.work_dir / "cluster", base_port).stop()  # by its pid files, if any run
    # The last run's cluster (its logs) is kept beside it until the next run.
    shutil.rmtree(args.work_dir / "cluster.previous", ignore_errors=True)
    if (args.work_dir / "cluster").exists():
        (args.work_dir / "cluster").rename(args.work_dir / "cluster.previous")
    cluster = start(args.work_dir / "cluster", base_port)
    try:
        result = run_drill(
            cluster,
            args.work_dir,
            kills=args.kills,
            freezes=args.freezes,
            backup_kills=args.backup_kills,
        )
    finally:
        cluster.stop()
    title = "Galera behind HAProxy with its supervisor: nodes killed, frozen, two and all at once"
    print(table(title, result.ledger, result.checks))
    failed = not result.passed
    if not args.no_control:
        log("negative control: an asynchronous replica promoted")
        control = run_control(args.work_dir / "control")
        print(table("control: async replica promoted (must show a loss)", control.ledger,
                    control.checks))  # fmt: skip
        seen = not control.check(LOSS_CHECK).passed
        print(f"control: the loss was {'SEEN' if seen else 'NOT SEEN (the drill is blind)'}")
        failed = failed or not seen
    bounds = f"recovery bounds {RECOVERY_LIMIT:g} s, {HEAL_LIMIT:g} s for two nodes or all"
    print(f"drill: {'FAIL' if failed else 'PASS'} ({bounds})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
