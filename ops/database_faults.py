"""When the database is unreachable, stalled or shedding load: how it is reported (one log
line per kind of failure per interval, never a traceback per request) and the breaker it
opens. Which errors mean that is core/database_errors.py; api/exceptions.py turns them into
503 `unavailable` with Retry-After and reports them here through DATABASE_FAULT_REPORTER."""

import logging
import threading
import time

from django.conf import settings

from core.database_errors import database_unavailable, database_unreachable, failure_kind
from core.metrics import database_breaker_open

logger = logging.getLogger("config.database")


class DatabaseBreaker:
    """After a request found the database server away, the process answers 503 at once for
    DATABASE_BREAKER_SECONDS instead of sending every request into the same timeouts: worker
    threads stay free (for /healthz among others) while a stalled database is down. Then one
    request at a time probes the database (half-open) while the others still get 503: its
    success closes the breaker, its failure trips it again, so a stalled database holds at
    most one worker thread of the process. Per process, like the Redis back-offs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tripped = False
        self._probing = False
        self._open_until = 0.0

    def trip(self) -> None:
        with self._lock:
            self._tripped, self._probing = True, False
            self._open_until = time.monotonic() + settings.DATABASE_BREAKER_SECONDS
        database_breaker_open.set(1)

    def admit(self) -> bool | None:
        """May this request use the database? False: answer 503. True: go ahead. None: go
        ahead as the probe, and call `probe_done` when the answer is ready."""
        with self._lock:
            if not self._tripped:
                return True
            if self._probing or time.monotonic() < self._open_until:
                return False
            self._probing = True
            return None

    def probe_done(self) -> None:
        """The probe answered without tripping the breaker again: the database is back."""
        with self._lock:
            if self._probing:
                self._tripped = self._probing = False
                database_breaker_open.set(0)

    def is_closed(self) -> bool:
        """True while no fault is being waited out: every request may use the database."""
        with self._lock:
            return not self._tripped

    def is_open(self) -> bool:
        """True while requests are being refused without trying the database."""
        with self._lock:
            return self._tripped and (self._probing or time.monotonic() < self._open_until)

    def reset(self) -> None:
        with self._lock:
            self._tripped = self._probing = False
            self._open_until = 0.0
        database_breaker_open.set(0)


breaker = DatabaseBreaker()


class OncePerInterval:
    """Says yes to the first event of each kind, then once per `interval` seconds, and
    counts what it said no to in between."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def admit(self, kind: str, interval: float) -> int | None:
        """None: stay quiet. Otherwise how many were suppressed since the last report."""
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < interval:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return None
            self._last[kind] = now
            return self._suppressed.pop(kind, 0)


_reports = OncePerInterval()


def report_database_unavailable(error: BaseException, *, where: str) -> None:
    """Log one line for this kind of failure, at most once per DATABASE_FAULT_LOG_INTERVAL;
    open the breaker if the server itself is away."""
    if database_unreachable(error):
        breaker.trip()
    kind = failure_kind(error)
    suppressed = _reports.admit(kind, settings.DATABASE_FAULT_LOG_INTERVAL)
    if suppressed is None:
        return
    logger.error(
        "database unavailable (%s) in %s: %s; answering 503 (%d more since the last report)",
        kind,
        where,
        error,
        suppressed,
    )


class DatabaseOutageLogFilter(logging.Filter):
    """For log records of other code that carry a database-unavailable exception (for
    example a service logging a failed recount while the database is down): drop the
    traceback and let one record per kind through per interval."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or not database_unavailable(error):
            return True
        kind = f"{record.name}: {failure_kind(error)}"
        if _reports.admit(kind, settings.DATABASE_FAULT_LOG_INTERVAL) is None:
            return False
        record.msg = f"{record.getMessage()}: {error}"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        return True
