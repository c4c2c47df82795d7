"""`make run` shows the demo's times in Beijing time unless TIME_ZONE says otherwise; a
deployment's settings keep UTC (issue 29: a Beijing browser was told every date field was
8 hours ahead)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def printed_under(
    code: str, settings_module: str, tmp_path: Path, *, unset: tuple[str, ...] = (), **environment
) -> str:
    """What `code` prints in a fresh interpreter under these settings (TIME_ZONE and `unset`
    taken out of this process's environment)."""
    base = {
        key: value for key, value in os.environ.items() if key != "TIME_ZONE" and key not in unset
    }
    finished = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **base,
            "DJANGO_SETTINGS_MODULE": settings_module,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "PYTHONPATH": str(ROOT),
            **environment,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    return finished.stdout.strip()


def time_zone_of(settings_module: str, tmp_path: Path, **environment: str) -> str:
    code = "from django.conf import settings; print(settings.TIME_ZONE)"
    return printed_under(code, settings_module, tmp_path, **environment)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [({}, "Asia/Shanghai"), ({"TIME_ZONE": "Europe/Paris"}, "Europe/Paris")],
)
def test_the_demo_runs_in_beijing_time_unless_told_otherwise(tmp_path, environment, expected):
    assert time_zone_of("config.settings.local", tmp_path, **environment) == expected


def test_the_base_settings_default_to_utc(tmp_path):
    assert time_zone_of("config.settings.base", tmp_path) == "UTC"


def test_the_servers_own_log_lines_are_in_the_apps_time_zone(tmp_path):
    """Issue: under `make run` the server's own lines (start, workers) were in UTC beside the
    app's lines in Beijing time. The server loads the settings, which set the app's zone."""
    read = (
        "import time; from config import serve; serve.load_settings(); print(time.strftime('%z'))"
    )

    assert printed_under(read, "config.settings.local", tmp_path, unset=("TZ",)) == "+0800"
