"""The task queue's drill (issue 41): coupons earned by 300 sign-ups, an import of 20,000
merchant codes and a grant to the 20,000 users of a file, run by a worker that is SIGKILLed
midway through all three, on a RabbitMQ of the test's own that is then restarted, and a second
worker: every earned coupon issued, every code imported and every user granted, none twice,
none lost, one audit entry for the import and one for the grant (decisions 1024 and 1025)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db.models import Count

from backoffice.staff_actions import recorded_action
from backoffice.staff_jobs.models import StaffJob
from config.celery import app
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.auto_issue import AutoIssueTask
from coupons.models.single_use_codes import SingleUseCode
from localservers.rabbitmq_server import RabbitMQServer
from localservers.waiting import wait_until
from tests.support.factories import CouponTemplateFactory

ROOT = Path(__file__).resolve().parents[2]
ACCOUNTS = 300
JOB_ROWS = 20_000

pytestmark = [pytest.mark.servers, pytest.mark.django_db(transaction=True)]


def start_worker(broker: RabbitMQServer, log: Path) -> subprocess.Popen:
    database = settings.DATABASES["default"]
    return subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-B",
            "--concurrency", "4", "--loglevel", "INFO", "--schedule", str(log.with_suffix(".beat")),
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


def staff_jobs_queued(broker: RabbitMQServer) -> tuple[StaffJob, StaffJob]:
    """An import of JOB_ROWS codes and a grant to JOB_ROWS users of a file, as the admin's pages
    start them, their messages sent to the drill's broker."""
    # Made as the drill's accounts are, in bulk: it earns no sign-up coupon of the drill's.
    [starter] = get_user_model().objects.bulk_create(
        [get_user_model()(username="drill-staff", is_staff=True, is_superuser=True)]
    )
    codes = "\n".join(["code", *(f"DRILL-{n:08d}" for n in range(JOB_ROWS))]).encode()
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"granted-{n}") for n in range(JOB_ROWS)
    )
    names = "\n".join(["user", *(user.username for user in users)]).encode()
    jobs = []
    for kind, content, options in [
        (StaffJob.Kind.CODES_IMPORT, codes, {"codes_only": False}),
        (StaffJob.Kind.GRANT_FILE, names, {"reason": "drill"}),
    ]:
        template = CouponTemplateFactory(total=2 * JOB_ROWS, per_user_limit=1)
        job = StaffJob(
            kind=kind, started_by=starter, template=template, options=options, upload_name="f.csv"
        )
        job.upload.save("f.csv", ContentFile(content), save=False)
        job.save()
        jobs.append(job)
    with app.connection_for_write(broker.url) as connection:
        for job in jobs:
            app.send_task("staff_jobs.run", args=[job.pk], connection=connection)
    return jobs[0], jobs[1]


def fresh(job: StaffJob) -> StaffJob:
    return StaffJob.objects.get(pk=job.pk)


def test_a_worker_killed_midway_through_issues_an_import_and_a_grant_loses_and_repeats_nothing(
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
        codes_import, users_grant = staff_jobs_queued(broker)
        workers.append(start_worker(broker, tmp_path / "worker-1.log"))
        wait_until(
            lambda: (
                issued() >= ACCOUNTS // 6 and fresh(codes_import).done and fresh(users_grant).done
            ),
            timeout=120,
            what="the first coupons, codes and grants",
        )
        os.killpg(workers[0].pid, signal.SIGKILL)  # midway: messages in hand unacknowledged
        workers[0].wait()
        killed_at = issued()
        jobs_killed_at = [(job.state, job.done) for job in map(fresh, (codes_import, users_grant))]
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
        wait_until(
            lambda: fresh(codes_import).finished and fresh(users_grant).finished,
            timeout=180,
            what="the import and the grant finished",
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

    # The import and the grant were killed midway, and each finished once.
    for state, done in jobs_killed_at:
        assert state == StaffJob.State.RUNNING and 0 < done < JOB_ROWS, jobs_killed_at
    codes_import, users_grant = fresh(codes_import), fresh(users_grant)
    assert (codes_import.state, codes_import.counts) == ("succeeded", {"imported": JOB_ROWS})
    assert SingleUseCode.objects.filter(template=codes_import.template).count() == JOB_ROWS
    assert (users_grant.state, users_grant.counts) == ("succeeded", {"granted": JOB_ROWS})
    granted = UserCoupon.objects.filter(template=users_grant.template)
    assert granted.count() == granted.values("user_id").distinct().count() == JOB_ROWS
    assert codes_import.attempts >= 2 and users_grant.attempts >= 2  # taken over after the kill
    for job, action in [(codes_import, "codes_import"), (users_grant, "coupons_grant")]:
        [entry] = LogEntry.objects.filter(object_id=str(job.template_id))
        assert recorded_action(entry)[0] == action
    [entry] = LogEntry.objects.filter(object_id=str(users_grant.template_id))
    assert recorded_action(entry)[1]["outcomes"] == {"granted": JOB_ROWS}
    print(f"import killed at {jobs_killed_at[0][1]}, grant at {jobs_killed_at[1][1]} of {JOB_ROWS}")
