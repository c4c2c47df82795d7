"""What ops and api use of the apps is wired by settings naming callables (ops imports no app,
api imports no ops): the health's Redis, the database-fault reporter, the scheduler's jobs."""

import pytest
from django.db import OperationalError

from api.exceptions import api_exception_handler
from ops.management.commands.run_scheduler import run_jobs, scheduled_jobs
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


def test_the_scheduler_runs_every_job_the_setting_names_past_a_failing_one(settings):
    settings.SCHEDULED_JOBS = {"first": f"{__name__}.first_job", "second": f"{__name__}.second_job"}
    written: list[str] = []

    run_jobs(scheduled_jobs(), write=written.append)

    assert ran == ["first", "second"]
    assert written == ["second job done"]


def test_the_order_expiry_is_a_scheduled_job(settings):
    from orders.jobs import expire_overdue_orders

    assert list(scheduled_jobs().values()) == [expire_overdue_orders]
