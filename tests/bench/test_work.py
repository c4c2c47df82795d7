"""The bench counts work from the servers themselves: statements from its own mariadbd's
`SHOW GLOBAL STATUS` (pings apart), Redis commands from its own redis-server's `INFO
commandstats`, as deltas per request with the readings' own statement and command taken off.
Run against the bench's real servers (localservers), started here."""

from collections.abc import Iterator

import pytest

from bench import work
from localservers.mariadb_server import LIKE_THE_SHARED_SERVER, MariaDBServer
from localservers.redis_server import RedisServer


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[tuple[MariaDBServer, RedisServer]]:
    base = tmp_path_factory.mktemp("bench-servers")
    mariadb = MariaDBServer(base / "mariadb", options=LIKE_THE_SHARED_SERVER)
    redis_server = RedisServer(base / "redis")
    mariadb.start()
    redis_server.start()
    try:
        yield mariadb, redis_server
    finally:
        redis_server.stop()
        mariadb.stop()


@pytest.mark.servers
def test_statements_pings_and_redis_commands_per_request(servers):
    # given: a status connection and an app connection of their own, as the harness has
    mariadb, redis_server = servers
    status = mariadb.connect()
    status.autocommit(True)
    app = mariadb.connect()
    app.autocommit(True)
    client = redis_server.client()
    before = work.read_counters(status, client)

    # when: 4 "requests", each a ping, two SELECTs and an UPDATE in a transaction, and three
    # Redis commands
    cursor = app.cursor()
    cursor.execute("CREATE DATABASE IF NOT EXISTS counting")
    cursor.execute("CREATE TABLE IF NOT EXISTS counting.t (id INT PRIMARY KEY, n INT)")
    cursor.execute("REPLACE INTO counting.t VALUES (1, 0)")
    setup = work.read_counters(status, client)
    for _ in range(4):
        app.ping()
        cursor.execute("SELECT 1")
        cursor.execute("SELECT n FROM counting.t WHERE id = 1")
        cursor.execute("BEGIN")
        cursor.execute("UPDATE counting.t SET n = n + 1 WHERE id = 1")
        cursor.execute("COMMIT")
        client.incrby("counted", 1)
        client.get("counted")
        client.expire("counted", 60)
    after = work.read_counters(status, client)

    # then
    done = work.per_request(setup, after, requests=4)
    assert done is not None
    assert (done.statements, done.pings, done.redis_commands) == (5.0, 1.0, 3.0)
    assert done.statements_by_kind == {"select": 2.0, "update": 1.0, "begin": 1.0, "commit": 1.0}
    assert done.redis_by_command == {"incrby": 1.0, "get": 1.0, "expire": 1.0}
    setup_work = work.per_request(before, setup, requests=1)
    assert setup_work is not None and setup_work.statements == 3.0  # CREATE x2, REPLACE
    status.close()
    app.close()


@pytest.mark.servers
def test_no_redis_figures_when_redis_is_stopped(servers):
    mariadb, _ = servers
    status = mariadb.connect()
    before = work.read_counters(status, None)
    after = work.read_counters(status, None)

    done = work.per_request(before, after, requests=10)

    assert done is not None
    assert (done.statements, done.redis_commands) == (0.0, None)
    assert work.per_request(before, after, requests=0) is None
    status.close()


@pytest.mark.django_db
def test_the_list_is_the_baseline_plus_one_statement_as_the_server_counts_them(user):
    """The same counting on the requests themselves: seeded through the real schema, served
    in-process on the test's own connection, counted by MariaDB for that session."""
    from django.db import connection
    from django.test import Client
    from rest_framework_simplejwt.tokens import AccessToken

    from bench import seed

    seed.create_templates("counted", 20, total=100, per_user_limit=1)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
    assert client.get("/api/coupons").status_code == 200  # the terms are read once
    connection.ensure_connection()

    def measured(path: str, requests: int = 5) -> work.Work:
        before = work.read_counters(connection.connection, None, scope="SESSION")
        for _ in range(requests):
            assert client.get(path).status_code == 200
        after = work.read_counters(connection.connection, None, scope="SESSION")
        done = work.per_request(before, after, requests=requests)
        assert done is not None
        return done

    baseline, listed = measured("/api/auth/me"), measured("/api/coupons")

    assert (baseline.statements, baseline.statements_by_kind) == (1.0, {"select": 1.0})
    assert (listed.statements, listed.statements_by_kind) == (2.0, {"select": 2.0})
