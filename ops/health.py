"""GET /readyz (and /healthz): the database decides (down -> 503); Redis is advisory (down ->
degraded).
A database that answers but lacks a stored procedure the app calls (HEALTH_REQUIRED_PROCEDURES:
a dump restored without --routines) is `down` too: every claim would fail, so the instance
must not be sent traffic; staff are told which procedure is missing.

What a stranger learns is the overall state only (`ok`, `degraded`, `down`) and the status
code; which component is down is for staff (a staff Bearer token), so an attacker cannot
watch for the fail-open window of the Redis throttles (SPEC section 19).

Cheap under a flood and quick under a stalled database:
- one answer serves every call for HEALTH_CACHE_SECONDS (at most 1 s), so a load balancer or
  an attacker polling it costs the database nothing more;
- the database is checked by one thread of its own on one MySQL connection that it keeps
  (reopened after a failure), with 1 s client timeouts, never by the request thread;
- a request waits for a check at most HEALTH_TIMEOUT while the database was last seen up, and
  RECHECK_WAIT (enough for a database that is back) once it was seen down; a check already
  hung longer than HEALTH_TIMEOUT is not waited for at all;
- a check that has not answered yet is slow, not a failure: the database's last answer stands
  for HEALTH_SLOW_GRACE seconds after it was given (a loaded database is not taken out of
  service), then the call answers `down` while the check goes on in the background. A check
  that fails (refused, reset, its own timeout) is `down` at once.

Liveness and readiness (what Kubernetes and load balancers probe): GET /livez says the process
answers, and asks nothing of the database or Redis, so a database outage never gets every
instance restarted; GET /readyz (and /healthz, its older name) is the answer above: send this
instance traffic or not."""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Protocol

import MySQLdb
from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils.module_loading import import_string
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from accounts.authentication import RevocableJWTAuthentication
from api.exceptions import method_not_allowed_response


class Pingable(Protocol):
    def ping(self) -> bool:
        """True when the Redis behind it answers (bounded by its own short timeout)."""
        ...


def redis_check() -> Pingable:
    """What /healthz pings for Redis: the setting HEALTH_REDIS names a callable returning it
    (the coupons app provides its counter), so ops imports no app."""
    provider: Callable[[], Pingable] = import_string(settings.HEALTH_REDIS)
    return provider()


# How long a call waits for a new check once the database has been seen down (seconds).
RECHECK_WAIT = 0.1


@dataclass(frozen=True)
class DatabaseSeen:
    answers: bool
    at: float
    missing_procedures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Health:
    database: DatabaseSeen
    redis: bool
    at: float  # time.monotonic() when it was found

    @property
    def ready(self) -> bool:
        return self.database.answers and not self.database.missing_procedures

    @property
    def status(self) -> str:
        if not self.ready:
            return "down"
        return "ok" if self.redis else "degraded"


# One statement: it answers, and which of its procedures the schema has.
PROCEDURES_SQL = (
    "SELECT ROUTINE_NAME FROM information_schema.ROUTINES"
    " WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE'"
)


class MySQLPing:
    """PROCEDURES_SQL on one kept connection, from the checker thread only (a MySQLdb
    connection is not shared between threads). Connect, read and write timeouts are 1 s, the
    client library's smallest, so a stalled server costs this thread a few seconds per check.
    Returns whether the database answered and which required procedures it lacks."""

    def __init__(self) -> None:
        self._link: MySQLdb.Connection | None = None

    def __call__(self) -> tuple[bool, tuple[str, ...]]:
        try:
            if self._link is None:
                self._link = self._connect()
            cursor = self._link.cursor()
            cursor.execute(PROCEDURES_SQL)
            present = {str(name) for (name,) in cursor.fetchall()}
        except MySQLdb.Error:
            self.close()
            return False, ()
        required = settings.HEALTH_REQUIRED_PROCEDURES
        return True, tuple(name for name in required if name not in present)

    def close(self) -> None:
        if self._link is not None:
            try:
                self._link.close()
            except MySQLdb.Error:
                pass
            self._link = None

    @staticmethod
    def _connect() -> MySQLdb.Connection:
        database = connection.settings_dict
        return MySQLdb.connect(
            host=database["HOST"] or "127.0.0.1",
            port=int(database["PORT"] or 3306),
            user=database["USER"],
            password=database["PASSWORD"] or "",
            database=database["NAME"],
            connect_timeout=1,
            read_timeout=1,
            write_timeout=1,
        )


def embedded_database_answers() -> bool:
    """SQLite (`make run` without DATABASE_URL): a local file, no network to hang on."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


class HealthMonitor:
    """The process's latest health answer and the one database check that may be running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="healthz")
        self._ping = MySQLPing()
        self._latest: Health | None = None
        self._seen: DatabaseSeen | None = None  # the last check that finished
        self._running: Future | None = None
        self._running_since = 0.0

    def current(self) -> Health:
        with self._lock:
            latest = self._latest
            if latest is not None and time.monotonic() - latest.at < settings.HEALTH_CACHE_SECONDS:
                return latest
        redis = redis_check().ping()  # bounded by the 250 ms claim timeout and its back-off
        if connection.vendor == "mysql":
            database = self._database_seen()
        else:
            database = DatabaseSeen(embedded_database_answers(), time.monotonic())
        health = Health(database=database, redis=redis, at=time.monotonic())
        with self._lock:
            self._latest = health
        return health

    def _database_seen(self) -> DatabaseSeen:
        now = time.monotonic()
        with self._lock:
            seen = self._seen
            if seen is not None and now - seen.at < settings.HEALTH_CACHE_SECONDS:
                return seen
            if self._running is None or self._running.done():
                self._running, self._running_since = self._checks.submit(self._check), now
            running, hung_for = self._running, now - self._running_since
        wait = settings.HEALTH_TIMEOUT - hung_for
        if seen is not None and not seen.answers:
            # Known down: a short look only, long enough for a database that is back.
            wait = min(wait, RECHECK_WAIT)
        if wait > 0:
            try:
                return running.result(timeout=wait)
            except FutureTimeout:
                pass
        # The check has not answered yet. Slow is not down: what the database last answered
        # stands for HEALTH_SLOW_GRACE; past that, a database that says nothing is down.
        if seen is not None and seen.answers and now - seen.at < settings.HEALTH_SLOW_GRACE:
            return seen
        return DatabaseSeen(answers=False, at=now)

    def _check(self) -> DatabaseSeen:
        """In the checker thread."""
        answers, missing = self._ping()
        seen = DatabaseSeen(answers=answers, at=time.monotonic(), missing_procedures=missing)
        with self._lock:
            self._seen = seen
        return seen

    def reset(self) -> None:
        """Forget what was seen and close the kept connection (tests change Redis and the
        database under it)."""
        self._checks.submit(self._ping.close).result()
        with self._lock:
            self._latest = self._seen = None


monitor = HealthMonitor()


def is_staff_caller(request: HttpRequest) -> bool:
    """A valid staff Bearer token. Asked only while the database answers (it loads the user)."""
    if "HTTP_AUTHORIZATION" not in request.META:
        return False
    try:
        authenticated = RevocableJWTAuthentication().authenticate(Request(request))
    except APIException:  # a bad or expired token: answered as for anyone
        return False
    if authenticated is None:
        return False
    user = authenticated[0]
    return isinstance(user, AbstractUser) and user.is_staff


def livez(request: HttpRequest) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):
        return method_not_allowed_response(request.method or "", ["GET", "HEAD"])
    response = JsonResponse({"status": "alive"})
    setattr(response, "_has_been_logged", True)  # noqa: B010  (as for healthz below)
    return response


def healthz(request: HttpRequest) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):  # TRACE, POST...: nothing to do here
        return method_not_allowed_response(request.method or "", ["GET", "HEAD"])
    health = monitor.current()
    body = {"status": health.status}
    if health.database.answers and is_staff_caller(request):
        missing = health.database.missing_procedures
        database = f"missing procedure {', '.join(missing)}" if missing else "ok"
        body |= {"database": database, "redis": "ok" if health.redis else "down"}
    response = JsonResponse(body, status=503 if health.status == "down" else 200)
    # A load balancer polls this every few seconds: the outage is logged where it is met
    # (ops.database_faults), not once more per poll by django.request.
    setattr(response, "_has_been_logged", True)  # noqa: B010  (Django's private flag)
    return response
