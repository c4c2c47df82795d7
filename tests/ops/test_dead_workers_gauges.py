"""A worker's live gauges leave with it (ops/vitals.py): the server starts a dead worker again
without telling anyone, so a scrape drops the live-gauge files of processes that are gone,
and keeps those of processes that live and every counter."""

import os
import subprocess
import sys

from ops.vitals import forget_dead_workers_gauges

# A worker in prometheus_client's multiprocess mode: the breaker's gauge (livemax, as
# core/metrics.py declares it) set to 1, and a counter counted, in files named by its pid.
WORKER = """
import os, sys
from prometheus_client import Counter, Gauge
Gauge("open", "", multiprocess_mode="livemax").set(1)
Counter("answers", "").inc()
print(os.getpid())
if sys.argv[1] == "stay":
    sys.stdin.read()  # lives until the test closes its stdin
"""


def worker(directory, *, stay: bool) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, "stay" if stay else "go"],
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_scrape_forgets_the_live_gauges_of_dead_workers_only(tmp_path):
    gone = worker(tmp_path, stay=False)
    gone_pid = int(gone.stdout.readline())
    gone.wait(timeout=30)
    living = worker(tmp_path, stay=True)
    living_pid = int(living.stdout.readline())
    try:
        assert {f"gauge_livemax_{gone_pid}.db", f"gauge_livemax_{living_pid}.db"} <= set(
            os.listdir(tmp_path)
        )

        forget_dead_workers_gauges(str(tmp_path))

        files = set(os.listdir(tmp_path))
        assert f"gauge_livemax_{gone_pid}.db" not in files
        assert f"gauge_livemax_{living_pid}.db" in files
        assert {f"counter_{gone_pid}.db", f"counter_{living_pid}.db"} <= files
    finally:
        living.communicate(timeout=30)
