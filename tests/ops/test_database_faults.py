"""Database trouble answers 503 `unavailable` with Retry-After and logs one line per kind.
The whole outage (stop, freeze, kill under a claim storm) is in test_database_outage.py; here
the parts one process can show on the shared database."""

import logging
import sys
import threading
import time

import pytest
from django.db import InterfaceError, OperationalError, connection, connections, transaction
from django.test import Client

from coupons.models import CouponTemplate, UserCoupon
from ops import database_faults
from ops.database_faults import DatabaseOutageLogFilter, breaker, database_unavailable
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.helpers import claim_url


@pytest.mark.django_db(transaction=True)
def test_a_claim_stuck_behind_a_held_row_lock_is_503_after_the_lock_wait_timeout(settings):
    """innodb_lock_wait_timeout comes from the connection's init_command (5 s by default,
    checked below); here this connection's is lowered to 1 s to keep the test short."""
    template = CouponTemplateFactory(total=5)
    client = bearer_client(UserFactory())
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        try:
            with transaction.atomic():
                CouponTemplate.objects.select_for_update().get(pk=template.pk)
                locked.set()
                release.wait(timeout=20)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    locked.wait(timeout=10)
    for session in connections.all():  # the test client's requests run on these connections
        with session.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
    try:
        started = time.monotonic()
        response = client.post(claim_url(template))
        waited = time.monotonic() - started
    finally:
        release.set()
        holder.join()
        for session in connections.all():
            with session.cursor() as cursor:
                cursor.execute(
                    "SET SESSION innodb_lock_wait_timeout = %s",
                    [settings.DATABASE_LOCK_WAIT_TIMEOUT],
                )

    assert response.status_code == 503
    assert response.json() == {
        "code": "unavailable",
        "detail": "The service is temporarily unavailable. Retry shortly.",
    }
    assert response["Retry-After"] == "5"
    assert 1 <= waited < 4
    assert UserCoupon.objects.count() == 0
    template.refresh_from_db()
    assert template.claimed_count == 0
    assert not breaker.is_open()  # one contended row is not the database being away
    assert client.post(claim_url(template)).status_code == 201


def test_the_session_lock_wait_timeout_is_set_on_every_connection(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.innodb_lock_wait_timeout, @@SESSION.sql_mode")
        lock_wait, sql_mode = cursor.fetchone()
    assert lock_wait == 5
    assert "STRICT_TRANS_TABLES" in sql_mode
    options = connection.settings_dict["OPTIONS"]
    assert (options["connect_timeout"], options["read_timeout"], options["write_timeout"]) == (
        2,
        8,
        8,
    )
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OperationalError(2006, "MySQL server has gone away"), True),
        (OperationalError(2013, "Lost connection to server during query"), True),
        (OperationalError(2003, "Can't connect"), True),
        (OperationalError(1205, "Lock wait timeout exceeded"), True),
        (OperationalError(1213, "Deadlock found"), True),
        # Seen by the drill at a thawed Galera writer's COMMIT (rolled back there)
        (OperationalError(1180, "Not connected to Primary Component"), True),
        (OperationalError(1305, "PROCEDURE coupon_decide does not exist"), True),
        (OperationalError(1305, "SAVEPOINT s1 does not exist"), False),  # a bug
        (InterfaceError(0, ""), True),
        (OperationalError(1054, "Unknown column 'x'"), False),  # a bug, not an outage
        (OperationalError(1644, "forced failure"), False),
        (ValueError("nope"), False),
    ],
)
def test_which_errors_mean_the_database_is_unavailable(error, expected):
    assert database_unavailable(error) is expected


def test_outage_logs_are_one_line_per_kind_per_interval_without_traceback(settings):
    """What ops.database_faults does with log records of other code (say a service's
    logger.exception after a failed recount) while the database is down."""
    settings.DATABASE_FAULT_LOG_INTERVAL = 60
    database_faults._reports = database_faults.OncePerInterval()
    log_filter = DatabaseOutageLogFilter()
    records = []
    for _ in range(50):
        for code in (2006, 2013):
            try:
                raise OperationalError(code, "gone")
            except OperationalError:
                record = logging.LogRecord(
                    "coupons.services", logging.ERROR, __file__, 1, "recount failed", None, None
                )
                record.exc_info = sys.exc_info()
                if log_filter.filter(record):
                    records.append(record)
    assert [(r.getMessage(), r.exc_info) for r in records] == [
        ("recount failed: (2006, 'gone')", None),
        ("recount failed: (2013, 'gone')", None),
    ]


def test_an_open_breaker_answers_503_at_once_but_not_healthz(db, settings):
    """While it is open, API paths get the JSON 503, pages the HTML one."""
    settings.DATABASE_BREAKER_SECONDS = 30
    breaker.trip()
    client = bearer_client(UserFactory())

    claim = client.post("/api/coupons/1/claim")
    health = Client().get("/healthz")

    assert (claim.status_code, claim.json()["code"], claim["Retry-After"]) == (
        503,
        "unavailable",
        "5",
    )
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    admin = Client().get("/admin/login/")
    assert (admin.status_code, admin["Content-Type"][:9]) == (503, "text/html")
    breaker.reset()
    assert client.post("/api/coupons/1/claim").status_code == 404


def test_after_the_pause_one_probe_at_a_time_goes_to_the_database(db, settings):
    """Half-open: once the pause is over, one request probes while the others still get 503
    at once (a stalled database holds one worker thread, not all); the probe's answer closes
    the breaker, a probe that finds the database away trips it again."""
    settings.DATABASE_BREAKER_SECONDS = 0
    breaker.trip()

    # when: the first request after the pause is the probe
    assert breaker.admit() is None
    # then: while it runs, the others are refused without touching the database
    assert (breaker.admit(), breaker.is_open()) == (False, True)
    # when: the probe finds the database away again
    breaker.trip()
    assert breaker.admit() is None  # the next probe, once the (zero) pause is over
    breaker.probe_done()
    # then: the database answered; everyone goes through again
    assert (breaker.admit(), breaker.admit(), breaker.is_open()) == (True, True, False)


def test_the_probe_is_a_real_request_that_closes_the_breaker(db, settings):
    settings.DATABASE_BREAKER_SECONDS = 0
    breaker.trip()
    client = bearer_client(UserFactory())

    probe = client.post("/api/coupons/1/claim")  # the database answers: 404, no template

    assert (probe.status_code, breaker.is_open(), breaker.admit()) == (404, False, True)


def test_non_api_paths_answer_503_too_through_handler500(db, monkeypatch, caplog):
    """Outside DRF (here a Django admin page whose session read fails), handler500 sees the
    exception and answers 503, logged as one line and not as django.request's traceback."""
    from django.contrib.sessions.backends import db as session_db

    def database_gone(self, *args, **kwargs):
        raise OperationalError(2006, "MySQL server has gone away")

    monkeypatch.setattr(session_db.SessionStore, "load", database_gone)
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "x" * 32

    with caplog.at_level(logging.INFO):
        response = client.get("/admin/")

    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert response["Content-Type"].startswith("text/html")  # an admin page is never JSON
    assert b"Temporarily unavailable" in response.content
    assert [r.name for r in caplog.records] == ["config.database"]
    assert caplog.records[0].exc_info is None
