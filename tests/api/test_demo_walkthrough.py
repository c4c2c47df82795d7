"""The API docs' examples work against `make run`'s demo (SPEC section 24): the ids, codes,
passwords and amounts they show are what a new demo answers when a newcomer follows them in
order. Runs tests/api/demo_walkthrough.py under the local settings on a new SQLite database,
as `make run` serves by default, with this run's Redis."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_example_a_newcomer_follows_is_what_the_demo_answers(tmp_path, settings):
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "REDIS_URL": settings.REDIS_URL,
        "COUPON_REDIS_PREFIX": f"demo-walkthrough-{os.getpid()}:",
        "PYTHONWARNINGS": "ignore",
    }

    finished = subprocess.run(
        [sys.executable, "-m", "tests.api.demo_walkthrough"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert finished.returncode == 0, finished.stderr[-4000:]
