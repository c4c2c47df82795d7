"""The task queue's drill (issue 41): coupons earned by 300 sign-ups issued by a worker that is
SIGKILLed midway, on a RabbitMQ of the test's own that is then restarted, and a second worker:
every earned coupon issued, none twice, none lost (decision 1024)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count

from coupons.auto_issue.models import AutoIssueTask
from coupons.models import CouponTemplate, UserCoupon
from localservers.rabbitmq_server import RabbitMQServer
from localservers.waiting import wait_until
from tests.support.factories import CouponTemplateFactory

ROOT = Path(__file__).resolve().parents[2]
ACCOUNTS = 300

pytestmark = [pytest.mark.servers, pytest.mark.django_db(transaction=True)]


def start_worker(broker: RabbitMQServer, log: Path) -> subprocess.Popen:
    database = settings.DATABASES["default"]
    return subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-B",
            "--concurrency", "2", "--loglevel", "INFO", "--schedule", str(log.with_suffix(".beat")),
        ],
        cwd=ROOT,
        env=os.environ | {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 3306}/{database['NAME']}",
            "CELERY_BROKER_URL": broker.url,
            # A relay killed midway leaves tasks taken but not sent: taken again after this.
            "AUTO_ISSUE_LEASE_SECONDS": "10",
        },
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # killed with its pool, as when its machine dies
    )  # fmt: skip


def issued() -> int:
    return UserCoupon.objects.filter(source=UserCoupon.Source.SIGNUP).count()


def test_a_worker_killed_midway_and_the_broker_restarted_lose_no_coupon_and_issue_none_twice(
    tmp_path,
):
    from coupons.auto_issue.events import signup_tasks

    welcome = CouponTemplateFactory(
        auto_issue=CouponTemplate.AutoIssue.SIGNUP, visibility="hidden", total=10 * ACCOUNTS
    )
    accounts = get_user_model().objects.bulk_create(
        get_user_model()(username=f"drill-{n}") for n in range(ACCOUNTS)
    )
    for account in get_user_model().objects.filter(username__startswith="drill-"):
        signup_tasks(user_id=account.pk)  # what each sign-up writes with its account
    assert AutoIssueTask.objects.count() == len(accounts)
    broker = RabbitMQServer(tmp_path / "rabbitmq")
    broker.start()
    workers = []
    try:
        workers.append(start_worker(broker, tmp_path / "worker-1.log"))
        wait_until(lambda: issued() >= ACCOUNTS // 6, timeout=120, what="the first coupons")
        os.killpg(workers[0].pid, signal.SIGKILL)  # midway: messages in hand unacknowledged
        workers[0].wait()
        killed_at = issued()
        broker.stop()  # restarted: its durable queue and persistent messages come back
        broker.start()
        workers.append(start_worker(broker, tmp_path / "worker-2.log"))
        restarted_at = time.monotonic()
        wait_until(lambda: issued() == ACCOUNTS, timeout=180, what="every earned coupon")
        took = time.monotonic() - restarted_at
        wait_until(
            lambda: not AutoIssueTask.objects.exclude(state=AutoIssueTask.State.ISSUED).exists(),
            timeout=60,
            what="every task settled issued",
        )
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        broker.stop()

    assert 0 < killed_at < ACCOUNTS  # the kill came midway
    per_user = UserCoupon.objects.filter(template=welcome).values("user_id").annotate(n=Count("id"))
    assert {row["n"] for row in per_user} == {1}
    assert per_user.count() == ACCOUNTS
    issued_tasks = AutoIssueTask.objects.filter(state=AutoIssueTask.State.ISSUED)
    assert issued_tasks.exclude(coupon_id=None).count() == ACCOUNTS
    print(f"killed after {killed_at} of {ACCOUNTS}; the rest {took:.1f} s after the restart")
