"""The issuing core's decision transaction (coupons/issuing/service.py `decide`): its
statements committed together in the fewest statements, or nothing written; and how a
concurrent claim that took the same slot shows itself.

Where it runs (docs/decisions/0240-decision-connection.md):
- On MySQL, on the connection of the "decision" alias (config/settings/base.py): the same
  database, kept out of autocommit, so the decision's first statement opens its transaction
  and the procedure it calls last (procedure.CALL_DECIDE_SQL) commits or rolls it back in the
  server (docs/decisions/0700-claim-decision-in-one-call.md). Every way out ends its
  transaction (the procedure, COMMIT or ROLLBACK, or the connection is closed, which the
  server rolls back), so it never carries an open transaction into the next statement or
  request.
- Inside an atomic block of the default connection (a caller's transaction, a test's): a
  savepoint there, so the outer transaction sees the decision and holds no lock the
  decision would wait for.
- Without the alias (SQLite under `make run`): the default connection, SET autocommit=0,
  the statements, SET autocommit=1 (which commits)."""

from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY
from MySQLdb.constants.ER import NO_REFERENCED_ROW_2 as ER_NO_REFERENCED_ROW

DECISION_ALIAS = "decision"


class Decision:
    """Handed to the decision's statements: they run on `connection`; `roll_back()` ends the
    decision with nothing written. `ends_in_server`: its last statement may be the procedure
    that commits or rolls back by itself (then `ended_in_server()`)."""

    def __init__(self, connection: BaseDatabaseWrapper, *, ends_in_server: bool = False) -> None:
        self.connection = connection
        self.ends_in_server = ends_in_server
        self.rolled_back = False
        self.ended = False

    def roll_back(self) -> None:
        """End the decision with nothing written (it returns normally)."""
        self.rolled_back = True

    def ended_in_server(self) -> None:
        """The server committed or rolled back the decision: nothing is left to send."""
        self.ended = True


@contextmanager
def decision_transaction() -> Iterator[Decision]:
    """One decision: its statements committed together, or (an exception, `roll_back()`)
    nothing written. See the module's docstring for which connection it takes."""
    if connection.in_atomic_block:
        with transaction.atomic():
            decision = Decision(connection)
            yield decision
            if decision.rolled_back:
                transaction.set_rollback(True)
    elif DECISION_ALIAS in settings.DATABASES:
        with _on_decision_connection(connections[DECISION_ALIAS]) as decision:
            yield decision
    else:
        with _with_autocommit_off() as decision:
            yield decision


@contextmanager
def _on_decision_connection(decision_connection: BaseDatabaseWrapper) -> Iterator[Decision]:
    """Out of autocommit, the first statement opens the transaction; the procedure ends it."""
    decision = Decision(decision_connection, ends_in_server=True)
    try:
        yield decision
    except BaseException:
        _roll_back_or_close(decision_connection)
        raise
    if decision.ended:
        return
    if decision.rolled_back:
        _roll_back_or_close(decision_connection)
        return
    try:
        decision_connection.commit()
    except DatabaseError:
        # The outcome is unknown, as after any failed COMMIT: never reuse this session.
        with suppress(DatabaseError):
            decision_connection.close()
        raise


def _roll_back_or_close(decision_connection: BaseDatabaseWrapper) -> None:
    """ROLLBACK; if that fails, close the connection (the server then rolls back)."""
    try:
        decision_connection.rollback()
    except DatabaseError:
        with suppress(DatabaseError):
            decision_connection.close()


@contextmanager
def _with_autocommit_off() -> Iterator[Decision]:
    """SET autocommit=0, the decision's own statements, then SET autocommit=1, which commits
    it (MySQL commits the open transaction when autocommit is switched back on; atomic()
    would send COMMIT and then SET autocommit=1)."""
    decision = Decision(connection)
    connection.set_autocommit(False)
    try:
        yield decision
        if decision.rolled_back:
            connection.rollback()
    except BaseException:
        _restore_autocommit(roll_back=True)
        raise
    _restore_autocommit(roll_back=False)


def _restore_autocommit(*, roll_back: bool) -> None:
    """Back to autocommit (committing unless rolled back). If that fails the connection is
    closed, so the next statement starts on a fresh one rather than inside this transaction."""
    try:
        with connection.wrap_database_errors:
            if roll_back:
                connection.rollback()
            connection.set_autocommit(True)
    except DatabaseError:
        connection.close()
        if not roll_back:
            raise


def decided_in_the_server() -> bool:
    """Whether a decision made now is the procedure's one call (MySQL, outside any atomic
    block of the default connection), which can read the user a token names itself."""
    return DECISION_ALIAS in settings.DATABASES and not connection.in_atomic_block


def is_user_gone(error: IntegrityError) -> bool:
    """The foreign-key error of a coupon whose user no longer exists (MySQL), for a claim
    authenticated on facts read before the user was deleted."""
    return connection.vendor == "mysql" and error.args[0] == ER_NO_REFERENCED_ROW


def is_slot_taken(error: IntegrityError) -> bool:
    """The duplicate-key error of the (template, user, slot) index, on MySQL or SQLite."""
    if connection.vendor == "mysql":
        return error.args[0] == ER_DUP_ENTRY
    return "UNIQUE constraint failed" in str(error)
