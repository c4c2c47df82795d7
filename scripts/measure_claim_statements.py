"""Database statements and Redis round trips / commands per request of the claim path, read
from the servers: MariaDB's session counters (SHOW SESSION STATUS on the request's own
connections, the default one and the decision's, so other clients of the server do not
count) and a redis-server of this script's own (INFO commandstats; round trips counted at the
client's socket).

    .venv/bin/python scripts/measure_claim_statements.py [--requests 20] [--port 3306]

Production settings, one thread, in-process (Django's test Client), a database
`coupons_stmt_<pid>` created and dropped on the MariaDB at 127.0.0.1:PORT. Prints, per
scenario, the mean per request of: Questions (every statement the client sent), the Com_*
counters that moved, Redis round trips and Redis commands (top-level and inside scripts)."""

import argparse
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from measurement_support import PORT, PORT_HELP, ClaimFixture, configure, own_database

from localservers.redis_server import RedisServer

DATABASE = f"coupons_stmt_{os.getpid()}"
configure(DATABASE)

STATUS_SQL = (
    "SHOW SESSION STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%%'"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="measured per scenario")
    parser.add_argument("--port", default=PORT, help=PORT_HELP)
    args = parser.parse_args()

    redis_server = RedisServer(Path(tempfile.mkdtemp(prefix="claim-statements-")))
    redis_server.start()
    os.environ["REDIS_URL"] = os.environ["COUPON_COUNTER_REDIS_URL"] = redis_server.url
    try:
        with own_database(DATABASE):
            run(args.requests)
    finally:
        redis_server.stop()


def run(count: int) -> None:
    import django

    django.setup()
    import redis
    from django.db import connections

    round_trips: Counter[str] = Counter()
    send = redis.connection.Connection.send_packed_command

    def counted_send(self, command, check_health=True):
        round_trips["n"] += 1
        return send(self, command, check_health)

    redis.connection.Connection.send_packed_command = counted_send  # type: ignore[method-assign]  # counting round trips at the socket
    probe = redis.Redis.from_url(os.environ["REDIS_URL"])

    def redis_commands() -> Counter:
        stats = probe.info("commandstats")
        return Counter({name[len("cmdstat_") :]: value["calls"] for name, value in stats.items()})

    from accounts.authentication import user_facts_load

    per = count + 2
    fixture = ClaimFixture(username_prefix="stmt", users=7 * per + 2)
    users, template, request = fixture.users, fixture.template, fixture.request
    selling, sold_out = template(10**6), template(1)

    def session_status() -> Counter:
        """The counters of this thread's sessions (every database alias), summed."""
        total: Counter = Counter()
        for session in connections.all():
            with session.cursor() as cursor:
                cursor.execute(STATUS_SQL)
                total.update({name: int(value) for name, value in cursor.fetchall()})
        return total

    def thread_ids() -> list[int]:
        for session in connections.all():
            session.ensure_connection()
        return [session.connection.thread_id() for session in connections.all()]

    request("post", f"/api/coupons/{sold_out}/claim", len(users) - 1, 201)
    request("post", f"/api/coupons/{sold_out}/claim", len(users) - 2, 409)  # facts recorded
    # Each request is a new user's. "logged in": its facts were loaded into Redis (as its
    # login does) just before, outside the count; "first request": they are missing, and the
    # request looks the user up and writes them back (accounts/user_facts.py).
    requests = {
        "GET /api/auth/me": ("get", "/api/auth/me", 200),
        "claim, template has room (201)": ("post", f"/api/coupons/{selling}/claim", 201),
        "claim, sold out (409)": ("post", f"/api/coupons/{sold_out}/claim", 409),
    }
    scenarios: dict[str, tuple[Callable[[int], None], Callable[[int], None]]] = {}
    for mode, loaded in (("logged in", True), ("first request", False)):
        for what, (method, path, expected) in requests.items():
            first_user = len(scenarios) * per

            def send_request(i, method=method, path=path, expected=expected, first_user=first_user):
                request(method, path, first_user + i, expected)

            def load_facts(i, loaded=loaded, first_user=first_user):
                if loaded:
                    user_facts_load([users[first_user + i].pk])

            scenarios[f"{what}, {mode}"] = (load_facts, send_request)
    print(f"{'scenario':47} {'stmts':>6} {'redis RT':>8} {'redis cmds':>10}  statements, commands")
    for name, (prepare, action) in scenarios.items():
        prepare(0)
        action(0)  # warm: the connection is open and the scripts are loaded
        statements: Counter[str] = Counter()
        commands: Counter[str] = Counter()
        trips = 0
        for i in range(1, count + 1):
            prepare(i)
            sessions = thread_ids()
            before, redis_before, trips_before = (
                session_status(),
                redis_commands(),
                round_trips["n"],
            )
            action(i)
            trips += round_trips["n"] - trips_before
            after = redis_commands()
            delta = session_status()
            if thread_ids() != sessions:
                raise RuntimeError("the request reconnected: session counters are not comparable")
            delta.subtract(before)
            delta["Questions"] -= len(sessions)  # the SHOW STATUS that read `after`, on each
            delta["Com_show_status"] -= len(sessions)
            statements.update(+delta)
            after.subtract(redis_before)
            after["info"] -= 1
            commands.update(+after)
        questions = statements.pop("Questions", 0) / count
        detail = ", ".join(f"{k[4:]} {v / count:g}" for k, v in sorted(statements.items()))
        redis_detail = ", ".join(f"{k} {v / count:g}" for k, v in sorted(commands.items()))
        print(
            f"{name:47} {questions:6.2f} {trips / count:8.2f}"
            f" {sum(commands.values()) / count:10.2f}"
            f"  {detail}; {redis_detail}"
        )


if __name__ == "__main__":
    main()
