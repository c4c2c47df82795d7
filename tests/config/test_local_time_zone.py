"""`make run` shows the demo's times in Beijing time unless TIME_ZONE says otherwise; a
deployment's settings keep UTC (issue 29: a Beijing browser was told every date field was
8 hours ahead)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def time_zone_of(settings_module: str, tmp_path: Path, **environment: str) -> str:
    base = {key: value for key, value in os.environ.items() if key != "TIME_ZONE"}
    finished = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.TIME_ZONE)"],
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


@pytest.mark.parametrize(
    ("environment", "expected"),
    [({}, "Asia/Shanghai"), ({"TIME_ZONE": "Europe/Paris"}, "Europe/Paris")],
)
def test_the_demo_runs_in_beijing_time_unless_told_otherwise(tmp_path, environment, expected):
    assert time_zone_of("config.settings.local", tmp_path, **environment) == expected


def test_the_base_settings_default_to_utc(tmp_path):
    assert time_zone_of("config.settings.base", tmp_path) == "UTC"


def test_gunicorns_own_log_lines_are_in_the_apps_time_zone(tmp_path):
    """Issue: under `make run` gunicorn's own lines (booting, workers) were in UTC beside the
    app's lines in Beijing time. Reading the served config sets the app's zone."""
    base = {key: value for key, value in os.environ.items() if key not in ("TIME_ZONE", "TZ")}
    read = (
        "import runpy, time; runpy.run_path('config/gunicorn_conf.py'); print(time.strftime('%z'))"
    )
    finished = subprocess.run(
        [sys.executable, "-c", read],
        cwd=ROOT,
        env={
            **base,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stdout.strip() == "+0800"
