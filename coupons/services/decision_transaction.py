"""The issuing core's decision transaction (coupons/services/issuing.py `decide`): its
statements committed together in the fewest round trips, or nothing written; and how a
concurrent claim that took the same slot shows itself."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, IntegrityError, connection, transaction
from MySQLdb.constants.ER import DUP_ENTRY as ER_DUP_ENTRY


class Decision:
    """Handed to the decision's statements: `roll_back()` ends it with nothing written."""

    def __init__(self) -> None:
        self.rolled_back = False

    def roll_back(self) -> None:
        """End the decision with nothing written (it returns normally)."""
        self.rolled_back = True


@contextmanager
def decision_transaction() -> Iterator[Decision]:
    """The decision's transaction in the fewest statements: SET autocommit=0, the decision's
    own statements, then SET autocommit=1, which commits it (MySQL commits the open
    transaction when autocommit is switched back on), where atomic() sends COMMIT and then
    SET autocommit=1. An exception or `roll_back()`: ROLLBACK, nothing written. Inside an
    atomic block (a caller's transaction, or a test's), a savepoint through atomic()."""
    decision = Decision()
    if connection.in_atomic_block:
        with transaction.atomic():
            yield decision
            if decision.rolled_back:
                transaction.set_rollback(True)
        return
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


def is_slot_taken(error: IntegrityError) -> bool:
    """The duplicate-key error of the (template, user, slot) index, on MySQL or SQLite."""
    if connection.vendor == "mysql":
        return error.args[0] == ER_DUP_ENTRY
    return "UNIQUE constraint failed" in str(error)
