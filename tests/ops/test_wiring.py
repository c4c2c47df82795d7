"""What ops and api use of the apps is wired by settings naming callables (ops imports no app,
api imports no ops): the health's Redis, the database-fault reporter, the scheduler's jobs."""

import threading

import pytest
from django.conf import settings
from django.db import OperationalError

from api.exceptions import api_exception_handler
from ops.management.commands.run_scheduler import (
    ScheduledJob,
    run_each_on_its_thread,
    scheduled_jobs,
)
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory

pinged: list[str] = []
reported: list[tuple[BaseException, str]] = []
ran: list[str] = []


class AnswersNo:
    def ping(self) -> bool:
        pinged.append("ping")
        return False


def redis_that_answers_no() -> AnswersNo:
    return AnswersNo()


def record_fault(error: BaseException, *, where: str) -> None:
    reported.append((error, where))


def first_job() -> str:
    ran.append("first")
    raise RuntimeError("the first job fails")


def second_job() -> str:
    ran.append("second")
    return "second job done"


@pytest.fixture(autouse=True)
def _clear():
    for seen in (pinged, reported, ran):
        seen.clear()


@pytest.mark.django_db
def test_healthz_pings_the_redis_the_setting_names(settings):
    settings.HEALTH_REDIS = f"{__name__}.redis_that_answers_no"

    response = bearer_client(UserFactory(is_staff=True)).get("/healthz")  # staff see details

    assert pinged == ["ping"]
    assert response.json() == {"status": "degraded", "database": "ok", "redis": "down"}


def test_the_exception_handler_reports_a_database_outage_to_the_named_reporter(settings):
    settings.DATABASE_FAULT_REPORTER = f"{__name__}.record_fault"
    error = OperationalError(2006, "MySQL server has gone away")

    response = api_exception_handler(error, {"view": object()})

    assert response.status_code == 503
    assert response.data["code"] == "unavailable"
    assert reported == [(error, "object")]


def test_the_default_reporter_is_the_operations_one(settings):
    from django.utils.module_loading import import_string

    from ops.database_faults import report_database_unavailable

    assert import_string(settings.DATABASE_FAULT_REPORTER) is report_database_unavailable


@pytest.mark.django_db  # each run closes stale connections
def test_the_scheduler_runs_every_job_the_setting_names_past_a_failing_one(settings):
    settings.SCHEDULED_JOBS = {
        "first": (f"{__name__}.first_job", 0.05),
        "second": (f"{__name__}.second_job", 0.05),
    }
    written: list[str] = []
    ran.clear()
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()

    runs = run_each_on_its_thread(scheduled_jobs(), write=written.append, stop=stop)

    assert set(ran) == {"first", "second"}  # the first fails every time; the second runs
    assert runs == len(ran)
    assert set(written) == {"second job done"}


@pytest.mark.django_db(transaction=True)  # each thread its own connection
def test_a_slow_job_never_delays_the_others():
    """The one-second watches must run while a long job is still working: the slow job here
    waits until the quick one has run five times, which it could never do if they took turns
    on one thread."""
    quick_runs = threading.Semaphore(0)
    stop = threading.Event()

    def slow() -> str:
        for _ in range(5):
            assert quick_runs.acquire(timeout=10), "the quick job did not run meanwhile"
        stop.set()
        return "slow job done"

    def quick() -> None:
        quick_runs.release()

    written: list[str] = []
    jobs = {
        "slow": ScheduledJob(run=slow, every_seconds=3600),
        "quick": ScheduledJob(run=quick, every_seconds=0.01),
    }

    run_each_on_its_thread(jobs, write=written.append, stop=stop)

    assert written == ["slow job done"]


def test_the_scheduler_keeps_the_one_second_watches_and_beat_sends_the_rest():
    """The watches a backlog of queued work must never delay run on threads of their own
    (decision 1024); everything else is a task celery beat sends, each expiring with its
    period, by the name a worker knows it by."""
    from accounts.user_facts import user_facts_forget_noted
    from config.celery import app
    from coupons.issuing.reconcile import coupon_counters_follow_the_database

    assert {name: (job.run, job.every_seconds) for name, job in scheduled_jobs().items()} == {
        "counter epoch": (coupon_counters_follow_the_database, 1),
        "user facts to forget": (user_facts_forget_noted, 1),
    }
    app.loader.import_default_modules()  # each app's tasks.py, as a worker does
    beat = {
        name: (entry["task"], entry["schedule"], entry["options"]["expires"])
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    }
    assert beat == {
        "order expiry": ("orders.expire_overdue_orders", 20, 20),
        "expired tokens": ("accounts.flush_expired_tokens", 3600, 3600),
        "idempotency records": ("api.purge_idempotency_records", 3600, 3600),
        "coupon counters": ("coupons.counters_reconcile", 60, 60),
        "automatic issues": ("coupons.auto_issue_relay", 2, 2),
        "staff jobs lost": ("staff_jobs.resend_lost", 60, 60),
        "staff jobs' old files": ("staff_jobs.forget_files", 3600, 3600),
    }
    assert {task for task, _, _ in beat.values()} <= set(app.tasks)
