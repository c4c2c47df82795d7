"""run_scheduler: order expiry and the cleanups (expired tokens, idempotency records) run by
themselves, and the process stops cleanly on SIGTERM."""

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import DatabaseError
from rest_framework_simplejwt.token_blacklist.models import OutstandingToken

from api.models import IdempotencyRecord
from core import clock
from localservers.waiting import wait_until
from ops.management.commands.run_scheduler import run_every
from orders.models import Order
from tests.support.factories import ProductFactory, UserFactory

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
def test_the_scheduler_process_runs_every_job_and_stops_on_sigterm():
    from orders import services

    user, product = UserFactory(), ProductFactory(stock=5)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 2}]
    )
    Order.objects.filter(pk=order.pk).update(expire_at=clock.now() - timedelta(seconds=1))
    # The cleanups' leftovers: a refresh token past its expiry, a key record past its lifetime.
    OutstandingToken.objects.create(
        user=user, jti="expired", token="t", expires_at=clock.now() - timedelta(seconds=1)
    )
    IdempotencyRecord.objects.create(
        user=user,
        key_digest="0" * 64,
        key="old",
        request_digest="0" * 64,
        created_at=clock.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS, seconds=1),
    )
    database = settings.DATABASES["default"]
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
        f"{database['NAME']}",
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_scheduler", "--interval", "0.2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: Order.objects.get(pk=order.pk).status == Order.Status.CANCELLED,
            timeout=20,
            what="the scheduler to cancel the overdue order",
        )
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    finally:
        process.kill()

    assert Order.objects.get(pk=order.pk).status == Order.Status.CANCELLED
    product.refresh_from_db()
    assert product.stock == 5
    assert process.returncode == 0
    assert (
        "Scheduler started: order expiry every 0.2 s, expired tokens every 3600 s, "
        "idempotency records every 3600 s, coupon counters every 60 s, counter epoch every 1 s, "
        "automatic issues every 2 s, user facts to forget every 1 s." in output
    )
    assert "Expired 1 unpaid orders (skipped 0)." in output
    assert not OutstandingToken.objects.exists()
    assert "Flushed expired refresh tokens." in output
    assert not IdempotencyRecord.objects.exists()
    assert "Deleted 1 expired idempotency records." in output
    assert "Scheduler stopped after" in output
