"""The limits every row is measured against (SPEC sections 21 and 36), in the same run: DRF's
empty view with no middleware (GET /bench/empty on the same server, config/handlers.py), the
same view through the whole middleware stack (GET /bench/bare; both api/bare.py: no
authentication, no database) and the database alone on the hot row
(scripts/measure_hot_row.py against the bench's own mariadbd, no app: the claim's statements
and its one call, at as many connections as the app can have deciding at once)."""

import json
import os
import subprocess
import sys

from bench.harness import REPO_ROOT, Harness
from bench.progress import log
from bench.results import HotRow, HotRowStorm, Load

BARE_PATH = "/bench/bare"
EMPTY_PATH = "/bench/empty"
HOT_ROW_SCRIPT = REPO_ROOT / "scripts" / "measure_hot_row.py"


def bare_drf(harness: Harness) -> Load:
    """DRF's empty view through the whole middleware stack."""
    return _empty_drf_view(harness, BARE_PATH, "bare DRF")


def empty_view(harness: Harness) -> Load:
    """DRF's empty view with no middleware: what the crowd's rows are judged against."""
    return _empty_drf_view(harness, EMPTY_PATH, "empty view")


def _empty_drf_view(harness: Harness, path: str, label: str) -> Load:
    sizes = harness.sizes
    tokens = [user.token for user in harness.users("bare", sizes.concurrency, quiet=True)]
    log(f"[{label}] GET {path} x{sizes.baseline_requests} at c={sizes.concurrency}")
    harness.warm_up("GET", path, tokens, requests=sizes.baseline_warmup)
    load = harness.throughput("GET", path, tokens, requests=sizes.baseline_requests)
    log(
        f"[{label}] {load.rps:.0f} req/s, p50 {load.p50_ms:.1f} ms, p99 {load.p99_ms:.1f} ms,"
        f" statuses {dict(load.statuses)}, CPU {load.cpu}"
    )
    return load


def hot_row(harness: Harness, *, connections: int) -> HotRow:
    seconds = harness.sizes.hot_row_seconds
    command = [sys.executable, str(HOT_ROW_SCRIPT), "--json", "--threads", str(connections)]
    command += ["--seconds", str(seconds), "--decisions", "200"]
    command += ["--server", f"127.0.0.1:{harness.mariadb.port}"]
    log(f"[hot row] the database alone: {connections} connections, {seconds} s per storm")
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    environment.pop("DJANGO_SETTINGS_MODULE", None)  # the script picks its own settings

    def measure() -> dict:
        finished = subprocess.run(
            command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False
        )
        if finished.returncode != 0:
            raise RuntimeError(f"measure_hot_row.py failed: {finished.stderr[-2000:]}")
        return json.loads(finished.stdout.strip().splitlines()[-1])

    measured, cpu = harness.cores_during(measure)
    row = HotRow(
        connections=connections,
        decision_p50_ms=round(measured["p50_ms"], 2),
        storms=tuple(HotRowStorm(**storm) for storm in measured["storms"]),
        cpu=cpu,
    )
    for storm in row.storms:
        log(
            f"[hot row] {storm.label}: {storm.per_second:.0f} claims/s, row locks waited"
            f" {storm.row_lock_ms_per_claim:.2f} ms per claim"
        )
    return row
