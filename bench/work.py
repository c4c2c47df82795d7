"""What a load cost the servers, read from the servers themselves: SQL statements (MariaDB's
`Questions`, which counts every statement a client sent and not the connection health check's
COM_PING, counted apart as `Com_admin_commands`) and Redis commands (`INFO commandstats`), as
deltas around the load, per answered request. Both servers are the bench's own, so nothing
but the load and these reads adds to them."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import MySQLdb
import redis

from bench.results import Work

# The counters read; `Questions` is the total, the Com_* ones say what the statements were.
# Com_* also count the statements a procedure runs (the claim's CALL: its UPDATE, INSERT ...
# SELECT, COMMIT and the SELECT of its answer), which `Questions` counts as the one CALL.
STATEMENT_KINDS = (
    "Com_call_procedure",
    "Com_select",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_delete",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_set_option",
)
PING = "Com_admin_commands"
# Each reading is itself one statement (the SHOW) and one Redis command (INFO), counted by the
# servers in the reading that follows it: taken off the delta.
OWN_STATEMENTS_PER_READING = 1
OWN_REDIS_COMMAND = "info"


@dataclass(frozen=True)
class ServerCounters:
    """One reading of both servers' cumulative counters."""

    mariadb: Mapping[str, int]
    redis_calls: Mapping[str, int]  # calls per command name


def read_counters(
    database: MySQLdb.Connection,
    redis_client: redis.Redis | None,
    *,
    scope: Literal["GLOBAL", "SESSION"] = "GLOBAL",
) -> ServerCounters:
    """The counters now: the whole server's (the bench: the app runs in other processes), or
    `database`'s own session's (a test serving requests on its own connection). Redis
    figures only with a `redis_client` (None: Redis stopped)."""
    names = ("Questions", PING, *STATEMENT_KINDS)
    cursor = database.cursor()
    cursor.execute(
        f"SHOW {scope} STATUS WHERE Variable_name IN (" + ", ".join(["%s"] * len(names)) + ")",
        names,
    )
    mariadb = {str(name): int(value) for name, value in cursor.fetchall()}
    cursor.close()
    calls: dict[str, int] = {}
    if redis_client is not None:
        try:
            for command, stats in redis_client.info("commandstats").items():
                calls[command.removeprefix("cmdstat_")] = int(stats["calls"])
        except redis.RedisError:
            calls = {}
    return ServerCounters(mariadb=mariadb, redis_calls=calls)


def per_request(before: ServerCounters, after: ServerCounters, *, requests: int) -> Work | None:
    """The work between two readings divided by `requests`; None when nothing was answered.
    Redis figures are None when either reading had none (Redis stopped)."""
    if requests <= 0:
        return None

    def delta(name: str) -> int:
        return after.mariadb.get(name, 0) - before.mariadb.get(name, 0)

    statements = delta("Questions") - OWN_STATEMENTS_PER_READING
    by_kind = {
        kind.removeprefix("Com_"): round(delta(kind) / requests, 3)
        for kind in STATEMENT_KINDS
        if delta(kind)
    }
    redis_commands: float | None = None
    by_command: dict[str, float] = {}
    if before.redis_calls and after.redis_calls:
        for command, calls in after.redis_calls.items():
            if command == OWN_REDIS_COMMAND:
                continue
            made = calls - before.redis_calls.get(command, 0)
            if made:
                by_command[command] = round(made / requests, 3)
        redis_commands = round(sum(by_command.values()), 3)
    return Work(
        statements=round(statements / requests, 3),
        pings=round(delta(PING) / requests, 3),
        redis_commands=redis_commands,
        statements_by_kind=by_kind,
        redis_by_command=by_command,
    )
