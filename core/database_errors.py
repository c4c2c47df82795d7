"""Which database errors mean "the database cannot serve this now, try again" (down, stalled
or shedding load), and the one call through which they are reported. The reporting itself
(log lines, the breaker) belongs to operations: ops.database_faults, named by the setting
DATABASE_FAULT_REPORTER, so that the API's exception handler never imports ops."""

import logging
from typing import Protocol

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils.module_loading import import_string

logger = logging.getLogger("config.database")

# MySQL / MariaDB error numbers that say "the database cannot serve this now, try again":
# the server is unreachable, went away, was shut down or killed the connection, timed out,
# or refused work it could not do in time. Anything else (a bad column, a syntax error) is a
# bug and stays a 500.
UNAVAILABLE_ERROR_CODES = frozenset(
    {
        1040,  # too many connections
        1047,  # WSREP has not yet prepared node: a Galera node outside the primary component
        1053,  # server shutdown in progress
        1180,  # error during COMMIT: a Galera node out of the primary component (rolled back)
        1205,  # lock wait timeout exceeded
        1213,  # deadlock found
        1927,  # connection was killed (MariaDB)
        1969,  # query execution was interrupted, max_statement_time exceeded (MariaDB)
        2002,  # can't connect through socket
        2003,  # can't connect to server
        2005,  # unknown server host
        2006,  # server has gone away
        2013,  # lost connection during query
        2055,  # lost connection at a given stage
        3024,  # max_execution_time exceeded (MySQL)
        4031,  # disconnected by the server for inactivity (MySQL 8)
    }
)


# Of those, the ones that say the server itself is away (not one contended row): they open
# the breaker below.
CONNECTION_ERROR_CODES = frozenset(
    {1040, 1047, 1053, 1180, 1927, 2002, 2003, 2005, 2006, 2013, 2055, 4031}
)


# 1305 with this: a stored procedure is missing (a dump restored without --routines); /healthz
# says so, and `manage.py restore_procedures` creates it again. 1305 is also "SAVEPOINT does
# not exist", a bug, which stays a 500.
ER_SP_DOES_NOT_EXIST = 1305


def database_unavailable(error: BaseException) -> bool:
    """True for an error that means the database is down, stalled or overloaded, or lacks a
    procedure the app calls."""
    if isinstance(error, InterfaceError):  # the connection is already closed or broken
        return True
    if isinstance(error, OperationalError):
        code = error.args[0] if error.args else None
        if code == ER_SP_DOES_NOT_EXIST:
            return len(error.args) > 1 and str(error.args[1]).startswith("PROCEDURE")
        if isinstance(code, int):
            return code in UNAVAILABLE_ERROR_CODES
        return "database is locked" in str(code)  # SQLite under `make run`
    return False


def database_unreachable(error: BaseException) -> bool:
    """The database server is away (down, stalled, refusing connections)."""
    if isinstance(error, InterfaceError):
        return True
    code = error.args[0] if isinstance(error, OperationalError) and error.args else None
    return code in CONNECTION_ERROR_CODES


def failure_kind(error: BaseException) -> str:
    code = error.args[0] if error.args and isinstance(error.args[0], int) else None
    return f"{type(error).__name__} {code}" if code is not None else type(error).__name__


class DatabaseFaultReporter(Protocol):
    def __call__(self, error: BaseException, *, where: str) -> None:
        """Note that `error` (database_unavailable) was met in `where` (a view or a path)."""
        ...


def report_database_fault(error: BaseException, *, where: str) -> None:
    """Hand a database-unavailable error to the reporter the settings name."""
    path = getattr(settings, "DATABASE_FAULT_REPORTER", "")
    if not path:
        logger.error("database unavailable in %s: %s; answering 503", where, error)
        return
    reporter: DatabaseFaultReporter = import_string(path)
    reporter(error, where=where)
