"""How long commits stall when a backup node dies or stalls, and whether a short stall gets a
node evicted, under each of Galera's failure-detection settings (issue 31 item 4). A 3-node
cluster of its own per setting; one client commits small INSERTs through HAProxy's writer
port in a loop and notes each commit's time.

    .venv/bin/python scripts/measure_galera_eviction.py [--kills 3] [--stalls 1.0 2.0]

Per setting: node 3 SIGKILLed `--kills` times (the longest commit within 10 s of each kill;
the node restarted and Synced before the next), then SIGSTOPped for each of `--stalls`
seconds and continued (the longest commit meanwhile, and whether node 1 saw the cluster
shrink: an eviction, which a pause of a healthy node should not cause)."""

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from drill.run import wait_all_synced  # noqa: E402
from localservers.galera import EVS_TIMEOUTS, Cluster, free_base_port  # noqa: E402

SETTINGS = {
    "Galera's defaults (suspect 5 s, inactive 15 s)": (
        "evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;"
        "evs.suspect_timeout=PT5S;evs.inactive_timeout=PT15S;evs.install_timeout=PT7.5S"
    ),
    "the local cluster's (suspect 1.5 s, inactive 3 s)": EVS_TIMEOUTS,
    "deploy/galera's (suspect 3 s, inactive 6 s)": (
        "evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;"
        "evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
    ),
    "tighter (suspect 1 s, inactive 2 s)": (
        "evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.3S;"
        "evs.suspect_timeout=PT1S;evs.inactive_timeout=PT2S;evs.install_timeout=PT2S"
    ),
}
BACKUP = 3


class Committer:
    """Commits one small row at a time through HAProxy; keeps (start, duration) of each."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.commits: list[tuple[float, float]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        import MySQLdb

        connection = None
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                if connection is None:
                    connection = self.cluster.connect(database="eviction")
                    connection.autocommit(True)
                connection.cursor().execute("INSERT INTO beats (at) VALUES (NOW(6))")
                self.commits.append((started, time.monotonic() - started))
            except MySQLdb.Error:
                connection = None
                time.sleep(0.05)

    def longest_between(self, start: float, end: float) -> float:
        """The longest commit that started in [start, end), or the longest gap without one."""
        inside = [(at, took) for at, took in self.commits if start <= at < end]
        if not inside:
            return end - start
        gaps = [b[0] - (a[0] + a[1]) for a, b in zip(inside, inside[1:], strict=False)]
        return max([took for _, took in inside] + gaps)


def cluster_size(cluster: Cluster) -> int:
    try:
        return int(cluster.wsrep_status(1).get("wsrep_cluster_size", "0"))
    except Exception:
        return 0


def measure(name: str, evs: str, kills: int, stalls: list[float], work: Path) -> None:
    cluster = Cluster(work / "cluster", free_base_port(), evs=evs).start()
    try:
        connection = cluster.connect()
        connection.cursor().execute("CREATE DATABASE eviction")
        connection.cursor().execute(
            "CREATE TABLE eviction.beats (id BIGINT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6))"
        )
        connection.close()
        committer = Committer(cluster)
        committer.thread.start()
        time.sleep(2)
        for number in range(1, kills + 1):
            at = time.monotonic()
            cluster.kill(BACKUP)
            time.sleep(10)
            stall = committer.longest_between(at, at + 10)
            print(f"| {name} | kill {number} | {stall:.2f} s | - |", flush=True)
            cluster.restart(BACKUP)
            wait_all_synced(cluster)
        for seconds in stalls:
            at = time.monotonic()
            cluster.freeze(BACKUP)
            smallest = 3
            while time.monotonic() - at < seconds:
                smallest = min(smallest, cluster_size(cluster))
                time.sleep(0.1)
            cluster.thaw(BACKUP)
            while time.monotonic() - at < seconds + 3:
                smallest = min(smallest, cluster_size(cluster))
                time.sleep(0.1)
            stall = committer.longest_between(at, at + seconds + 3)
            evicted = "yes" if smallest < 3 else "no"
            print(f"| {name} | pause {seconds:g} s | {stall:.2f} s | {evicted} |", flush=True)
            if smallest < 3:  # evicted: it comes back as a restarted node does
                cluster.kill(BACKUP)
                cluster.restart(BACKUP)
            wait_all_synced(cluster)
        committer.stopping.set()
        committer.thread.join(timeout=10)
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--stalls", type=float, nargs="*", default=[1.0, 2.0])
    parser.add_argument(
        "--only", help="measure only the settings whose name contains this (e.g. deploy)"
    )
    args = parser.parse_args()
    print("| setting | fault of node 3 | longest commit or gap | node evicted |")
    print("|---|---|---|---|")
    for name, evs in SETTINGS.items():
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="eviction-") as work:
            measure(name, evs, args.kills, args.stalls, Path(work))


if __name__ == "__main__":
    main()
