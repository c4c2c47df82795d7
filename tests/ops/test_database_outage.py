"""The app under gunicorn on a MariaDB of the test's own, which is stopped, frozen (SIGSTOP)
and killed while claims keep arriving: every answer is 201, 409 or 503 `unavailable` with
Retry-After within seconds, nothing is lost or half-written, /healthz answers within a second
throughout, and the same gunicorn recovers each time the database returns."""

import http.client
import json
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mariadb_server import OwnMariaDB
from tests.support.redis_server import free_port
from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

SETUP_SCRIPT = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from rest_framework_simplejwt.tokens import AccessToken
from core import clock
from coupons.models import CouponTemplate

User = get_user_model()
now = clock.now()
template = CouponTemplate.objects.create(
    name="outage", type="direct", value=100, min_amount=0, total=1_000_000,
    per_user_limit=100_000, valid_from=now - timedelta(days=1), valid_until=now + timedelta(days=1),
)
users = User.objects.bulk_create([User(username=f"shopper{i}", password="!") for i in range(20)])
staff = User.objects.create(username="staff", password="!", is_staff=True, is_superuser=True)
session = SessionStore()
session["_auth_user_id"] = str(staff.pk)
session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
session["_auth_user_hash"] = staff.get_session_auth_hash()
session.create()
print(json.dumps({
    "template_id": template.pk,
    "tokens": [str(AccessToken.for_user(user)) for user in User.objects.filter(is_staff=False)],
    "session": session.session_key,
}))
"""


@dataclass(frozen=True)
class Answer:
    status: int
    code: str | None
    coupon_id: int | None
    retry_after: str | None
    seconds: float


def request(port: int, method: str, path: str, headers: dict, timeout: float = 30) -> Answer:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        retry_after = response.getheader("Retry-After")
        status = response.status
    finally:
        connection.close()
    body = json.loads(raw) if raw.startswith(b"{") else {}
    return Answer(
        status=status,
        code=body.get("code"),
        coupon_id=body.get("id") if status == 201 else None,
        retry_after=retry_after,
        seconds=time.monotonic() - started,
    )


class Storm:
    """Client threads claiming without pause (one request at a time each) until stopped."""

    def __init__(self, port: int, template_id: int, tokens: list[str], threads: int = 6):
        self.port, self.path = port, f"/api/coupons/{template_id}/claim"
        self.tokens = tokens
        self.answers: list[Answer] = []
        self.failures: list[BaseException] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]

    def run(self, index: int) -> None:
        count = 0
        while not self.stopping.is_set():
            token = self.tokens[(index + count * len(self.threads)) % len(self.tokens)]
            count += 1
            try:
                answer = request(self.port, "POST", self.path, {"Authorization": f"Bearer {token}"})
            except Exception as error:  # a timeout or a dropped connection: a test failure
                self.failures.append(error)
                return
            self.answers.append(answer)
            time.sleep(0.01)

    def __enter__(self) -> "Storm":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def created_since(self, index: int) -> int:
        return sum(1 for answer in self.answers[index:] if answer.status == 201)


@pytest.fixture
def app_on_own_database(tmp_path, own_redis):
    """(server, port, setup facts, gunicorn log path): gunicorn with the production settings
    on a private mariadbd with the schema migrated in."""
    server = OwnMariaDB(tmp_path)
    server.install()
    server.start()
    link = server.connect()
    link.cursor().execute("CREATE DATABASE coupons_outage CHARACTER SET utf8mb4")
    link.close()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin:/usr/sbin:/sbin",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": server.url("coupons_outage"),
        "REDIS_URL": own_redis.url,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_COOKIES": "0",
        "LOG_LEVEL": "WARNING",
        # Tight bounds so that the whole run takes tens of seconds.
        "DB_CONNECT_TIMEOUT": "1",
        "DB_READ_TIMEOUT": "2",
        "DB_WRITE_TIMEOUT": "2",
        "DB_LOCK_WAIT_TIMEOUT": "1",
        "DATABASE_FAULT_LOG_INTERVAL": "3600",
        "THROTTLE_CLAIM": "100000/min",
    }
    manage = [str(BIN / "python"), "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    setup = subprocess.run(
        [*manage, "shell", "-c", SETUP_SCRIPT],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    facts = json.loads(setup.stdout.strip().splitlines()[-1])
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    with open(log_path, "wb") as log:
        gunicorn = subprocess.Popen(
            # The shipped server (worker class, threads, timeouts), as the image runs it.
            [
                str(BIN / "gunicorn"), "--config", "config/gunicorn_conf.py",
                "--bind", f"127.0.0.1:{port}",
            ],
            cwd=REPO, env=env, stdout=log, stderr=log,
        )  # fmt: skip
    try:
        wait_until(lambda: _healthy(port), timeout=30, what="gunicorn to answer /healthz with 200")
        yield server, port, facts, log_path, gunicorn
    finally:
        gunicorn.terminate()
        gunicorn.wait(timeout=30)
        server.stop()


def _healthy(port: int) -> bool:
    try:
        return request(port, "GET", "/healthz", {}, timeout=2).status == 200
    except OSError:
        return False


@pytest.mark.servers
def test_claims_survive_a_stopped_a_frozen_and_a_killed_database(app_on_own_database):
    server, port, facts, log_path, gunicorn = app_on_own_database
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
            what="claims to succeed again on the same gunicorn",
        )

    with Storm(port, facts["template_id"], facts["tokens"]) as storm:
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
    link = server.connect("coupons_outage")
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

    # The same gunicorn recovered by itself, and logged one line per kind of failure, with
    # no traceback per request.
    assert gunicorn.poll() is None
    assert request(port, "GET", "/healthz", {}).status == 200
    log = log_path.read_text()
    assert "Traceback" not in log
    outage_lines = [line for line in log.splitlines() if "database unavailable" in line]
    assert 1 <= len(outage_lines) <= 20, outage_lines
