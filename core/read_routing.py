"""Which reads may go to another database node (SPEC section 22; decision 0801): the ones
that need not see the caller's own writes, marked by `replica_reads()` where they are made
(the admin's template report and its CSV exports, the shopper list's terms read). The
router sends them to the alias `replica` (DATABASE_REPLICA_URL, config/settings/base.py)
when the settings route reads there; every other read and every write stays on `default`,
the writer, so a claim, an order, "my coupons" and authentication always see what the
caller just wrote. The replica's sessions also wait for the cluster to catch up before each
read (`wsrep_sync_wait`, in its init_command), so even a marked read is never behind a write
that committed before it started.

A Django router routes by model, but the same models (UserCoupon, CouponTemplate) are read
by both kinds of code; so the mark is per block of code, not per model."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings

REPLICA = "replica"

# A ContextVar, not a global: each request thread (and each asyncio task) has its own.
_may_read_from_replica: ContextVar[bool] = ContextVar("may_read_from_replica", default=False)


@contextmanager
def replica_reads() -> Iterator[None]:
    """Inside the block, ORM reads may go to the replica. Only for reads that may be a
    moment older than the caller's own writes; never around a write. Also usable inside a
    generator that a streamed response consumes later (the value is restored, not reset by
    token, so a generator resumed in another context does not fail)."""
    previous = _may_read_from_replica.get()
    _may_read_from_replica.set(True)
    try:
        yield
    finally:
        _may_read_from_replica.set(previous)


def replica_lines(lines: Iterator[str]) -> Iterator[str]:
    """A streamed export's lines, read in `replica_reads()` as the consumer asks for them."""
    with replica_reads():
        yield from lines


def reads_alias() -> str:
    """The alias a read made here goes to: "replica" in a marked block when the settings
    route reads there, else "default"."""
    if _may_read_from_replica.get() and settings.DATABASE_REPLICA_READS:
        return REPLICA
    return "default"


class ReplicaRouter:
    """DATABASE_ROUTERS' one router: marked reads to the replica, everything else to the
    default database; nothing is migrated on the replica (it is the same database)."""

    def db_for_read(self, model: type, **hints: Any) -> str | None:
        alias = reads_alias()
        return alias if alias == REPLICA else None

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        # An object read from the replica and saved is written to the writer, never back
        # to the node it came from (Django's fallback would be the object's own alias).
        return "default" if _alias_of(hints.get("instance")) == REPLICA else None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # The replica is the same database as default: a coupon read there may point at a
        # template read on default (the CSV export does that).
        return True if REPLICA in (_alias_of(obj1), _alias_of(obj2)) else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db == REPLICA else None


def _alias_of(instance: Any) -> str | None:
    state = getattr(instance, "_state", None)
    return getattr(state, "db", None)
