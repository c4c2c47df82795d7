"""The shipped server on a MariaDB of the test's own, which is stopped, frozen (SIGSTOP)
and killed while claims keep arriving: every answer is 201, 409 or 503 `unavailable` with
Retry-After within seconds, nothing is lost or half-written, /healthz answers within a second
throughout, and the same server recovers each time the database returns."""

import time

import pytest

from localservers.waiting import wait_until
from tests.support.shipped_server import (
    DATABASE,
    Answer,
    ClaimStorm,
    dockerfile_command,
    request,
    shipped_app,
)

# Tight bounds so that the whole run takes tens of seconds.
TIGHT_DATABASE_TIMEOUTS = {
    "DB_CONNECT_TIMEOUT": "1",
    "DB_READ_TIMEOUT": "2",
    "DB_WRITE_TIMEOUT": "2",
    "DB_LOCK_WAIT_TIMEOUT": "1",
    "DATABASE_FAULT_LOG_INTERVAL": "3600",
}


@pytest.fixture
def app_on_own_database(tmp_path, own_redis):
    """The shipped server (the image's command: workers, threads, timeouts from
    config/serve.py) with the tight database timeouts, on a private mariadbd."""
    command = dockerfile_command()
    with shipped_app(tmp_path, own_redis.url, command, extra_env=TIGHT_DATABASE_TIMEOUTS) as app:
        yield app


@pytest.mark.servers
def test_claims_survive_a_stopped_a_frozen_and_a_killed_database(app_on_own_database):
    app = app_on_own_database
    server, port, facts, served = app.database, app.port, app.facts, app.process
    admin = {"Cookie": f"sessionid={facts['session']}"}
    assert request(port, "GET", "/admin/jsi18n/", admin).status == 200
    outage_health: list[list[Answer]] = []
    outage_admin: list[Answer] = []

    def during_outage() -> None:
        """What a load balancer and the Django admin (outside DRF) get while the database is
        away. /healthz's answer may be up to a second old (ops/health.py): past that it
        must say down."""
        time.sleep(1.1)
        outage_health.append([request(port, "GET", "/healthz", {}) for _ in range(3)])
        outage_admin.append(request(port, "GET", "/admin/jsi18n/", admin))

    def outage_seen_after(index: int) -> None:
        wait_until(
            lambda: any(answer.status == 503 for answer in storm.answers[index:]),
            timeout=15,
            what="the app to notice the outage",
        )

    def recovered_after(index: int) -> None:
        wait_until(
            lambda: storm.created_since(index) >= 5,
            timeout=30,
            what="claims to succeed again on the same server",
        )

    with ClaimStorm(port, facts["template_id"], facts["tokens"]) as storm:
        recovered_after(0)

        server.stop()  # a clean shutdown, as in a restart
        outage_seen_after(len(storm.answers))
        during_outage()
        time.sleep(1)
        server.start()
        recovered_after(len(storm.answers))

        server.freeze()  # stalled: the port accepts, nothing answers
        outage_seen_after(len(storm.answers))
        # Requests already in flight when it froze hold their threads until their own
        # timeouts (read 2 s, then a reconnect's 1 s); the breaker keeps new ones out.
        time.sleep(3)
        during_outage()
        server.thaw()
        recovered_after(len(storm.answers))

        server.kill()  # a crash: InnoDB recovers on the next start
        outage_seen_after(len(storm.answers))
        during_outage()
        time.sleep(1)
        server.start()
        recovered_after(len(storm.answers))

    assert storm.failures == []
    answers = storm.answers
    assert {answer.status for answer in answers} <= {201, 409, 503}
    unavailable = [answer for answer in answers if answer.status == 503]
    assert len(unavailable) > 0
    assert {(answer.code, answer.retry_after) for answer in unavailable} == {("unavailable", "5")}
    assert [answer for answer in answers if answer.status == 409] == []  # room and limit left
    # A stalled database costs a client seconds (timeouts: connect 1 s, read 2 s), not minutes.
    assert max(answer.seconds for answer in answers) < 10
    # Once the app knows the database is away and the requests caught in flight have timed
    # out, the breaker keeps worker threads free: /healthz answers "down" within a second
    # even while the database hangs.
    # (Best of three within 1 s, each within 3 s: on a starved CI machine a single request
    # can wait for a CPU longer than the health check's own 0.8 s deadline.)
    for tries in outage_health:
        assert {answer.status for answer in tries} == {503}, tries
        assert min(answer.seconds for answer in tries) < 1, tries
        assert max(answer.seconds for answer in tries) < 3, tries
    assert {(answer.status, answer.retry_after) for answer in outage_admin} == {(503, "5")}

    # Nothing lost: every 201 is a row. Nothing half-written: claimed_count is the row count.
    # A 503 may still have committed (the answer was lost with the connection), but only a
    # 503 can be such a row, and a retry would then see it.
    link = server.connect(DATABASE)
    cursor = link.cursor()
    cursor.execute("SELECT id FROM user_coupons")
    rows = {row[0] for row in cursor.fetchall()}
    cursor.execute(
        "SELECT claimed_count FROM coupon_templates WHERE id = %s", [facts["template_id"]]
    )
    (claimed_count,) = cursor.fetchone()
    link.close()
    created = {answer.coupon_id for answer in answers if answer.status == 201}
    assert created <= rows
    assert claimed_count == len(rows)
    assert len(rows - created) <= len(unavailable)

    # The same server recovered by itself, and logged one line per kind of failure, with
    # no traceback per request.
    assert served.poll() is None
    # (/healthz's answer may be up to a second old, and its checker reconnects once the
    # database is back: the first fresh check says ok.)
    wait_until(
        lambda: request(port, "GET", "/healthz", {}).status == 200,
        timeout=10,
        what="/healthz ok after the recovery",
    )
    log = app.log.read_text()
    assert "Traceback" not in log
    outage_lines = [line for line in log.splitlines() if "database unavailable" in line]
    assert 1 <= len(outage_lines) <= 20, outage_lines
