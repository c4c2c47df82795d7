"""run_scheduler: the one-second watches (the epoch, user facts to forget) run by themselves,
each on its own thread, and the process stops cleanly on SIGTERM. The rest of the periodic work
is Celery's (tests/config/test_task_queue.py)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import DatabaseError

from localservers.waiting import wait_until
from ops.management.commands.run_scheduler import run_every

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db  # the loop closes stale connections between runs
def test_the_loop_runs_the_job_every_interval_and_survives_failures():
    calls = []

    def job():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise DatabaseError("database went away")

    runs = run_every(job, interval=0.05, stop=threading.Event(), max_runs=3)

    assert runs == 3
    assert len(calls) == 3
    assert calls[2] - calls[0] >= 0.1


@pytest.mark.django_db
def test_the_loop_stops_at_once_when_asked():
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()

    runs = run_every(lambda: None, interval=30, stop=stop)

    assert runs == 1
    assert time.monotonic() - started < 5


@pytest.mark.django_db(transaction=True)
def test_the_scheduler_process_runs_the_watches_and_stops_on_sigterm():
    from coupons.models import CounterEpoch

    database = settings.DATABASES["default"]
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
        f"{database['NAME']}",
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_scheduler"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: CounterEpoch.objects.filter(epoch__gte=3).exists(),
            timeout=20,
            what="the epoch watch to run each second",
        )
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    finally:
        process.kill()

    assert process.returncode == 0
    assert "Scheduler started: counter epoch every 1 s, user facts to forget every 1 s." in output
    assert "Scheduler stopped after" in output
