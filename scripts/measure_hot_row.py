"""Where one MySQL primary stops: the claim's decision transaction (the guarded UPDATE, the
insert, the commit: the very statements of coupons.services) driven straight at MariaDB
from many connections, on one hot template and spread over many, without Django or Redis,
so that the database (not Python) is what is measured.

    .venv/bin/python scripts/measure_hot_row.py [--threads 16] [--seconds 5]
        [--server HOST:PORT] [--json]

It creates (and drops afterwards) its own database `coupons_hot_<pid>` on the server (the
shared development server by default; `make bench` points it at its own mariadbd). Prints one
decision transaction's time (one connection, no contention), then claims per second with
every connection on one template: in the old lock-first shape, as separate statements
(UPDATE, INSERT, COMMIT: each reply read by Python while the row is locked), and in one call
of the decision's procedure (migration 0011, docs/decisions/0700-claim-decision-in-one-call.md);
then the procedure with each connection on a template of its own. Each line also says how
long claims waited for row locks (the server's Innodb_row_lock_time) per claim issued.
`--json` prints the same as one JSON object instead."""

import argparse
import json
import os
import statistics
import sys
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
DATABASE = f"coupons_hot_{os.getpid()}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
SERVER = {"host": "127.0.0.1", "port": 3306}  # --server
USERS = 60_000  # more than the claims a run makes on this machine
# Every template's claim window, whole milliseconds as the columns store them (the INSERT
# checks the template still has the window the decision read).
_START = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
TEMPLATE_WINDOW = (_START - timedelta(days=1), _START + timedelta(days=1))


@dataclass(frozen=True)
class Throughput:
    label: str
    claims: int
    seconds: float
    row_lock_ms: int  # the server's Innodb_row_lock_time grew by this much meanwhile
    row_lock_waits: int

    @property
    def per_second(self) -> float:
        return self.claims / self.seconds

    @property
    def row_lock_ms_per_claim(self) -> float:
        return self.row_lock_ms / self.claims if self.claims else 0.0


def connect(database: str | None = DATABASE):
    import MySQLdb

    named = {} if database is None else {"database": database}
    connection = MySQLdb.connect(user="root", **named, **SERVER)
    connection.autocommit(False)
    connection.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return connection


class Users:
    """Hands out distinct user ids to every thread: each claim is a new user's."""

    def __init__(self) -> None:
        self.next = 0
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            self.next += 1
            return self.next


def lock_first_claim(cursor, connection, *, template_id: int, user_id: int) -> tuple[bool, float]:
    """The shape before SPEC section 14, for comparison: the row lock first, then the user's
    count, the insert and the increment, then the commit (without the Python the old service
    ran between them, so this flatters it)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    started = time.perf_counter()
    cursor.execute("SELECT * FROM coupon_templates WHERE id = %s FOR UPDATE", [template_id])
    cursor.fetchall()
    cursor.execute(
        "SELECT COUNT(*) FROM user_coupons WHERE template_id = %s AND user_id = %s",
        [template_id, user_id],
    )
    cursor.fetchall()
    cursor.execute(
        "INSERT INTO user_coupons (template_id, user_id, slot, status, valid_from, valid_until,"
        " source, created_at, updated_at) VALUES (%s, %s, 1, 'unused', %s, %s, 'claim', %s, %s)",
        [template_id, user_id, *TEMPLATE_WINDOW, now, now],
    )
    cursor.execute(
        "UPDATE coupon_templates SET claimed_count = claimed_count + 1 WHERE id = %s",
        [template_id],
    )
    connection.commit()
    return True, time.perf_counter() - started


def claim(cursor, connection, *, template_id: int, user_id: int) -> tuple[bool, float]:
    """One decision transaction as the service runs it, with the service's statements and
    parameters (claim_sql.CouponInsert): (issued, seconds it took)."""
    from coupons.issuing.claim_sql import (
        COUNT_THE_CLAIM_SQL,
        INSERT_COUPON_SQL,
        ClaimCount,
        CouponInsert,
    )
    from coupons.models import UseWindow

    now = datetime.now(UTC).replace(tzinfo=None)
    started = time.perf_counter()
    count = ClaimCount(
        template_id=template_id,
        slot=1,
        window_opens_by=now,
        now=now,
        audience="all",
        reachable_with_codes=False,
        reachable_hidden=False,
    )
    cursor.execute(COUNT_THE_CLAIM_SQL, count.params())
    if cursor.rowcount == 0:
        connection.rollback()
        return False, time.perf_counter() - started
    window = UseWindow(*TEMPLATE_WINDOW)
    insert = CouponInsert(
        template_id=template_id,
        user_id=user_id,
        slot=1,
        coupon_window=window,
        source="claim",
        granted_by_id=None,
        grant_reason=None,
        now=now,
        window_opens_by=now,
        template_window=window,
        template_valid_days=None,
    )
    cursor.execute(INSERT_COUPON_SQL, insert.params())
    issued = cursor.rowcount == 1
    connection.commit()
    return issued, time.perf_counter() - started


def one_call_claim(cursor, connection, *, template_id: int, user_id: int) -> tuple[bool, float]:
    """One decision as the service runs it on MySQL: the procedure's one CALL, which commits
    in the server (procedure.decide_in_one_call)."""
    from coupons.issuing.claim_sql import ClaimCount, CouponInsert
    from coupons.issuing.procedure import decide_in_one_call
    from coupons.models import UseWindow

    now = datetime.now(UTC).replace(tzinfo=None)
    started = time.perf_counter()
    window = UseWindow(*TEMPLATE_WINDOW)
    count = ClaimCount(
        template_id=template_id,
        slot=1,
        window_opens_by=now,
        now=now,
        audience="all",
        reachable_with_codes=False,
        reachable_hidden=False,
    )
    insert = CouponInsert(
        template_id=template_id,
        user_id=user_id,
        slot=1,
        coupon_window=window,
        source="claim",
        granted_by_id=None,
        grant_reason=None,
        now=now,
        window_opens_by=now,
        template_window=window,
        template_valid_days=None,
    )
    decided = decide_in_one_call(
        cursor, count, insert, lambda moment: moment, idempotency_record_id=None
    )
    cursor.nextset()  # the CALL's own status: read before the next statement
    return decided.coupon_id is not None, time.perf_counter() - started


def row_locks() -> tuple[int, int]:
    """The server's (Innodb_row_lock_time in ms, Innodb_row_lock_waits) so far."""
    with closing(connect()) as connection, connection.cursor() as cursor:
        cursor.execute(
            "SHOW GLOBAL STATUS WHERE Variable_name IN"
            " ('Innodb_row_lock_time', 'Innodb_row_lock_waits')"
        )
        status = dict(cursor.fetchall())
    return int(status["Innodb_row_lock_time"]), int(status["Innodb_row_lock_waits"])


def lock_hold(template_id: int, users: Users, count: int) -> list[float]:
    with closing(connect()) as connection:
        cursor = connection.cursor()
        held = [claim(cursor, connection, template_id=template_id, user_id=users.take())[1]]
        for _ in range(count):
            took = claim(cursor, connection, template_id=template_id, user_id=users.take())[1]
            held.append(took)
    return held


def storm(
    label: str, template_ids: list[int], threads: int, seconds: float, users: Users, shape=claim
) -> Throughput:
    issued = [0] * threads
    stop = time.monotonic() + seconds
    barrier = threading.Barrier(threads + 1)

    def run(index: int) -> None:
        # Closed even when a claim fails: closing rolls back, and an open transaction would
        # hold the metadata lock that main's DROP DATABASE waits for.
        with closing(connect()) as connection:
            cursor = connection.cursor()
            template_id = template_ids[index % len(template_ids)]
            barrier.wait()
            while time.monotonic() < stop:
                if shape(cursor, connection, template_id=template_id, user_id=users.take())[0]:
                    issued[index] += 1

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    locks_before = row_locks()
    barrier.wait()
    started = time.monotonic()
    for worker in workers:
        worker.join()
    seconds = time.monotonic() - started
    locks_after = row_locks()
    return Throughput(
        label,
        sum(issued),
        seconds,
        row_lock_ms=locks_after[0] - locks_before[0],
        row_lock_waits=locks_after[1] - locks_before[1],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=USERS, help="more than a run claims")
    parser.add_argument("--decisions", type=int, default=1000, help="timed on one connection")
    parser.add_argument("--server", default="127.0.0.1:3306", help="the MariaDB to measure")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    host, port = args.server.rsplit(":", 1)
    SERVER.update(host=host, port=int(port))
    os.environ["DATABASE_URL"] = f"mysql://root@{host}:{port}/{DATABASE}"

    admin = connect(database=None)
    # Should a connection of the run still hold a lock, the DROP fails after this long
    # instead of hanging (the server's default wait is a year).
    admin.cursor().execute("SET SESSION lock_wait_timeout = 60")
    admin.cursor().execute(f"CREATE DATABASE {DATABASE}")
    try:
        run(
            args.threads,
            args.seconds,
            user_count=args.users,
            decisions=args.decisions,
            as_json=args.json,
        )
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.close()


def clone_rows(cursor, model, *, prototype_pk: int, count: int, numbered: str) -> None:
    """`count` copies of the row `prototype_pk` of `model`, in one INSERT ... SELECT: every
    column copied from a row the ORM wrote (so no column can be missed as the schema grows),
    `numbered` made unique with the copy's number."""
    columns = [
        field.column
        for field in model._meta.concrete_fields
        if not field.primary_key and not field.generated  # the server computes generated ones
    ]
    values = [f"CONCAT({column}, '-', seq)" if column == numbered else column for column in columns]
    table = model._meta.db_table
    cursor.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)}"
        f" FROM {table}, seq_1_to_{count} WHERE {table}.id = %s",
        [prototype_pk],
    )


def run(threads: int, seconds: float, *, user_count: int, decisions: int, as_json: bool) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from coupons.models import CouponTemplate

    call_command("migrate", verbosity=0)
    # One user and one template written by the ORM (the model's defaults for every column
    # this script does not care about), then copied in bulk by SQL.
    user = User.objects.create(username="hot", password="!")
    valid_from, valid_until = (moment.replace(tzinfo=UTC) for moment in TEMPLATE_WINDOW)
    template = CouponTemplate.objects.create(
        name="hot",
        type=CouponTemplate.Type.DIRECT,
        value=100,
        min_amount=0,
        total=4_000_000_000,
        per_user_limit=1,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    connection.close()
    # No read timeout: the bulk loads may take a while on a busy machine.
    with closing(connect()) as loader, loader.cursor() as cursor:
        clone_rows(cursor, User, prototype_pk=user.pk, count=user_count, numbered="username")
        clone_rows(cursor, CouponTemplate, prototype_pk=template.pk, count=threads, numbered="name")
        cursor.execute("SELECT id FROM coupon_templates ORDER BY id")
        template_ids = [row[0] for row in cursor.fetchall()]
        loader.commit()
    users = Users()
    took = lock_hold(template_ids[0], users, decisions)
    results = [
        storm(
            f"lock first (before), {threads} conns, one template",
            template_ids[:1],
            threads,
            seconds,
            users,
            shape=lock_first_claim,
        ),
        storm(f"statements, {threads} conns, one template", template_ids[:1], threads,
              seconds, users),
        storm(f"one call (now), {threads} conns, one template", template_ids[:1], threads,
              seconds, users, shape=one_call_claim),
        storm(f"one call (now), {threads} conns, {threads} templates", template_ids[1:],
              threads, seconds, users, shape=one_call_claim),
    ]  # fmt: skip
    p50, p99 = statistics.median(took) * 1000, statistics.quantiles(took, n=100)[98] * 1000
    if as_json:
        rows = [
            {
                "label": result.label,
                "claims": result.claims,
                "seconds": round(result.seconds, 3),
                "per_second": round(result.per_second, 1),
                "row_lock_ms_per_claim": round(result.row_lock_ms_per_claim, 3),
                "row_lock_waits": result.row_lock_waits,
            }
            for result in results
        ]
        print(json.dumps({"threads": threads, "p50_ms": p50, "p99_ms": p99, "storms": rows}))
        return
    print(
        f"one decision transaction, 1 connection: p50 {p50:.2f} ms,"
        f" p99 {p99:.2f} ms (commit's log flush included)"
    )
    for result in results:
        print(
            f"{result.label:48} {result.per_second:7.0f} claims/s ({result.claims} issued),"
            f" row locks waited {result.row_lock_ms_per_claim:.2f} ms per claim"
        )


if __name__ == "__main__":
    main()
