"""GET /healthz: the database decides (down -> 503); Redis is advisory (down -> degraded).

It answers within HEALTH_TIMEOUT (under 1 s) even when the database hangs: the database is
checked on a connection of its own with short timeouts, in a worker thread that the request
waits for only until the deadline. While one check is running, other health requests wait for
that one instead of starting more (a stalled database never piles up checking threads)."""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Protocol

import MySQLdb
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.utils.module_loading import import_string


class Pingable(Protocol):
    def ping(self) -> bool:
        """True when the Redis behind it answers (bounded by its own short timeout)."""
        ...


def redis_check() -> Pingable:
    """What /healthz pings for Redis: the setting HEALTH_REDIS names a callable returning it
    (the coupons app provides its counter), so ops imports no app."""
    provider: Callable[[], Pingable] = import_string(settings.HEALTH_REDIS)
    return provider()


_checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="healthz")
_lock = threading.Lock()
_running: Future | None = None


def mysql_answers() -> bool:
    """SELECT 1 on a fresh connection whose connect, read and write timeouts are 1 s (the
    client library's smallest), so a stalled server costs this thread at most a few seconds."""
    database = connection.settings_dict
    try:
        link = MySQLdb.connect(
            host=database["HOST"] or "127.0.0.1",
            port=int(database["PORT"] or 3306),
            user=database["USER"],
            password=database["PASSWORD"] or "",
            database=database["NAME"],
            connect_timeout=1,
            read_timeout=1,
            write_timeout=1,
        )
    except MySQLdb.Error:
        return False
    try:
        cursor = link.cursor()
        cursor.execute("SELECT 1")
        return cursor.fetchone() == (1,)
    except MySQLdb.Error:
        return False
    finally:
        link.close()


def database_check() -> Future:
    """The running check, or a new one."""
    global _running
    with _lock:
        if _running is None or _running.done():
            _running = _checks.submit(mysql_answers)
        return _running


def embedded_database_answers() -> bool:
    """SQLite (`make run` without DATABASE_URL): a local file, no network to hang on."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


def healthz(request) -> JsonResponse:
    deadline = time.monotonic() + settings.HEALTH_TIMEOUT
    is_mysql = connection.vendor == "mysql"
    check = database_check() if is_mysql else None
    redis = "ok" if redis_check().ping() else "down"  # bounded by the 250 ms claim timeout
    if check is None:
        database_ok = embedded_database_answers()
    else:
        try:
            database_ok = check.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            database_ok = False
    database = "ok" if database_ok else "down"
    if database != "ok":
        overall = "down"
    elif redis != "ok":
        overall = "degraded"
    else:
        overall = "ok"
    body = {"status": overall, "database": database, "redis": redis}
    response = JsonResponse(body, status=503 if overall == "down" else 200)
    # A load balancer polls this every few seconds: the outage is logged where it is met
    # (ops.database_faults), not once more per poll by django.request.
    response._has_been_logged = True
    return response
