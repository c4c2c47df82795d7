"""The server exactly as shipped (the Dockerfile's CMD, production settings, the shipped
database timeouts unless a test narrows them) on a private mariadbd that the test may stop,
freeze or kill: for outage tests that must hold for what runs in production."""

import http.client
import json
import re
import secrets
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from localservers.mariadb_server import MariaDBServer
from localservers.ports import free_port
from localservers.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DATABASE = "coupons_shipped"

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
    name="freeze", type="direct", value=100, min_amount=0, total=1_000_000,
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
    "staff_token": str(AccessToken.for_user(staff)),
    "session": session.session_key,  # the staff's Django admin login
}))
"""


def dockerfile_command() -> list[str]:
    """The image's CMD (the exec form, a JSON array), as `docker run` would start it."""
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("CMD "):
            return json.loads(line.removeprefix("CMD "))
    raise AssertionError("the Dockerfile has no CMD")


def dockerfile_sets(name: str) -> bool:
    """Whether the image's ENV gives `name` a value (`NAME=value` on an ENV line or after one)."""
    return re.search(rf"^(ENV)?\s+{name}=\S", (REPO / "Dockerfile").read_text(), re.M) is not None


def serve_script_command() -> list[str]:
    """The server's line of scripts/serve (`make run`), its shell variables left as written."""
    for line in (REPO / "scripts" / "serve").read_text().splitlines():
        if "config.serve" in line and not line.lstrip().startswith("#"):
            return shlex.split(line.replace("\\", "").rstrip("&"))
    raise AssertionError("scripts/serve does not start config.serve")


def option(command: list[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value` in an argv, None when absent."""
    for index, word in enumerate(command):
        if word == name and index + 1 < len(command):
            return command[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def with_option(command: list[str], name: str, value: str) -> list[str]:
    """The command with `name value` set, in place of `name value` or `name=value` if given."""
    out, skip = [], False
    for word in command:
        if skip:
            skip = False
        elif word == name:
            skip = True
        elif not word.startswith(name + "="):
            out.append(word)
    return [*out, name, value]


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict
    seconds: float
    retry_after: str | None = None

    @property
    def code(self) -> str | None:
        return self.body.get("code")

    @property
    def coupon_id(self) -> int | None:
        return self.body.get("id") if self.status == 201 else None


def request(port: int, method: str, path: str, headers: dict, timeout: float = 60) -> Answer:
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
        status=status, body=body, seconds=time.monotonic() - started, retry_after=retry_after
    )


def probe_every_quarter_second(port: int, times: int) -> list[Answer]:
    """`times` calls of /healthz on `port`, a quarter second apart."""
    answers = []
    for _ in range(times):
        answers.append(request(port, "GET", "/healthz", {}))
        time.sleep(0.25)
    return answers


class ClaimStorm:
    """Client threads claiming one request at a time each, without pause, until stopped."""

    def __init__(self, port: int, template_id: int, tokens: list[str], threads: int = 6):
        self.port, self.path, self.tokens = port, f"/api/coupons/{template_id}/claim", tokens
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
            except Exception as error:  # a dropped connection or a 60 s timeout
                self.failures.append(error)
                return
            self.answers.append(answer)
            time.sleep(0.01)

    def __enter__(self) -> "ClaimStorm":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=90)

    def created_since(self, index: int) -> int:
        return sum(1 for answer in self.answers[index:] if answer.status == 201)


@dataclass
class ShippedApp:
    database: MariaDBServer
    port: int
    probe_port: int  # the probes' own listener (the image's PROBE_BIND, here on 127.0.0.1)
    facts: dict
    log: Path
    process: subprocess.Popen


@contextmanager
def shipped_app(
    tmp_path: Path,
    redis_url: str,
    command: list[str],
    *,
    extra_env: Mapping[str, str] | None = None,
) -> Iterator[ShippedApp]:
    """`command` (an argv whose --bind is replaced) under production settings, with every
    timeout at its shipped default unless `extra_env` overrides it, on a private mariadbd
    (database DATABASE) with the schema, some shoppers and a staff login. The probes' own
    port as the image sets it, on a free port."""
    assert dockerfile_sets("PROBE_BIND")
    probe_port = free_port()
    database = MariaDBServer(tmp_path / "mariadb")
    database.start()
    link = database.connect()
    link.cursor().execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4")
    link.close()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin:/usr/sbin:/sbin",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": database.url(DATABASE),
        "REDIS_URL": redis_url,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_COOKIES": "0",
        "LOG_LEVEL": "WARNING",
        "THROTTLE_CLAIM": "100000/min",
        "PROBE_BIND": f"127.0.0.1:{probe_port}",
        **(extra_env or {}),
    }
    manage = [str(BIN / "python"), "manage.py"]
    process = None
    try:
        subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
        setup = subprocess.run(
            [*manage, "shell", "-c", SETUP_SCRIPT],
            cwd=REPO, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        facts = json.loads(setup.stdout.strip().splitlines()[-1])
        port = free_port()
        log = tmp_path / "server.log"
        with log.open("wb") as log_file:
            process = subprocess.Popen(
                with_option(command, "--bind", f"127.0.0.1:{port}"),
                cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            )  # fmt: skip

        def answering() -> bool:
            try:
                return request(port, "GET", "/healthz", {}, timeout=2).status == 200
            except OSError:
                return False

        wait_until(answering, timeout=30, what="the shipped server to answer /healthz")
        yield ShippedApp(
            database=database, port=port, probe_port=probe_port, facts=facts, log=log,
            process=process,
        )  # fmt: skip
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=60)
        database.stop()


STORM_CLIENTS = 40  # more than the server's request threads (2 workers x 8): every one is held
PROBERS, PROBES_EACH = 16, 4  # per port probed


@dataclass
class FreezeUnderAStorm:
    probes: dict[int, list[Answer]]  # by port
    claims: ClaimStorm

    def slow(self, port: int) -> list[Answer]:
        return [answer for answer in self.probes[port] if answer.seconds >= 1]

    def said(self, port: int) -> str:
        answers = self.probes[port]
        worst = max(answer.seconds for answer in answers)
        return f"{len(self.slow(port))} of {len(answers)} over 1 s, worst {worst:.3f} s"


def probe_through_a_freeze_under_a_storm(
    app: ShippedApp, ports: tuple[int, ...]
) -> FreezeUnderAStorm:
    """STORM_CLIENTS claim without pause; once they win, the database is frozen (SIGSTOP) and
    PROBERS per port call /healthz PROBES_EACH times from that first moment; then it is thawed
    and the claims must win again."""
    for port in ports:
        for _ in range(8):  # first-request imports in both workers
            request(port, "GET", "/healthz", {})
    storm = ClaimStorm(app.port, app.facts["template_id"], app.facts["tokens"], STORM_CLIENTS)
    with storm:
        wait_until(lambda: storm.created_since(0) >= 50, timeout=30, what="claims to work")
        app.database.freeze()
        with ThreadPoolExecutor(max_workers=PROBERS * len(ports)) as probers:
            asked = {
                port: [
                    probers.submit(probe_every_quarter_second, port, PROBES_EACH)
                    for _ in range(PROBERS)
                ]
                for port in ports
            }
            probes = {
                port: [answer for future in futures for answer in future.result()]
                for port, futures in asked.items()
            }
        app.database.thaw()
        thawed = len(storm.answers)
        wait_until(lambda: storm.created_since(thawed) >= 5, timeout=60, what="claims to recover")
    return FreezeUnderAStorm(probes=probes, claims=storm)
