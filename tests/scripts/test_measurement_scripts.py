"""Every measurement script in scripts/ runs for real, on a tiny input, against the test
MariaDB server and the test Redis database (each script makes and drops its own database):
a script that has drifted from the schema or the services fails here, not in a measurement
run (issue 14: measure_hot_row.py passed 7 parameters to an INSERT that takes 16, and its
template INSERT missed columns added since)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("measure_*.py"))
# The smallest run of each script, and a line its report must print.
TINY = {
    "measure_hot_row.py": (
        ["--threads", "2", "--seconds", "0.3", "--users", "20000", "--decisions", "20"],
        "one decision transaction, 1 connection",
    ),
    "measure_claim_cpu.py": (["--requests", "3", "--warmup", "1"], "claim, sold out (409)"),
    "measure_claim_statements.py": (["--requests", "2"], "claim, sold out (409)"),
    "measure_request_cpu.py": (["--requests", "3", "--warmup", "1"], "GET /api/coupons (20 te"),
    "measure_single_use_codes.py": (["--count", "50", "--runs", "1"], "median: 50 codes"),
    "measure_bulk_grant.py": (["--users", "30"], "run again: 30 users"),
    "measure_merchant_codes.py": (["--count", "50", "--runs", "1"], "median: 50 codes"),
    # A cluster of its own, one setting, one kill, no pause: about a minute.
    "measure_galera_eviction.py": (
        ["--only", "tighter", "--kills", "1", "--stalls"],
        "| tighter (suspect 1 s, inactive 2 s) | kill 1 |",
    ),
}


def test_every_measurement_script_has_a_tiny_run():
    assert SCRIPTS
    assert sorted(TINY) == sorted(script.name for script in SCRIPTS)


# Starts a redis-server of its own (its commands are then this run's alone).
STARTS_SERVERS = {"measure_claim_statements.py", "measure_galera_eviction.py"}


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(script, marks=pytest.mark.servers) if script.name in STARTS_SERVERS else script
        for script in SCRIPTS
    ],
    ids=lambda script: script.name,
)
def test_the_script_runs_on_a_tiny_input(script):
    arguments, reported = TINY[script.name]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("DJANGO_SETTINGS_MODULE", None)  # each script picks its own settings

    finished = subprocess.run(
        [sys.executable, str(script), *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert finished.returncode == 0, finished.stderr[-3000:]
    assert reported in finished.stdout, finished.stdout
    issued = [line for line in finished.stdout.splitlines() if "issued)" in line]
    assert all(" (0 issued)" not in line for line in issued), finished.stdout
