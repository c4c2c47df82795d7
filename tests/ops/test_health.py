"""/healthz tells a stranger only ok / degraded / down, staff what is down, and costs the
database one kept connection however often it is called (SPEC section 19)."""

import time

import pytest
from django.db import connection
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from localservers.mariadb_server import MariaDBServer
from tests.support.factories import UserFactory
from tests.support.helpers import use_counter_at


def client_of(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
    return client


@pytest.mark.django_db
def test_a_stranger_learns_only_the_overall_state():
    response = client_of().get("/healthz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_with_redis_down_a_stranger_and_a_shopper_see_degraded_staff_see_why(redis_namespace):
    use_counter_at("redis://127.0.0.1:1/0", prefix=redis_namespace)  # nothing listens on 1
    shopper, staff = UserFactory(), UserFactory(is_staff=True)

    anonymous = client_of().get("/healthz")
    as_shopper = client_of(shopper).get("/healthz")
    as_staff = client_of(staff).get("/healthz")
    with_a_bad_token = APIClient(HTTP_AUTHORIZATION="Bearer not-a-token").get("/healthz")

    assert (anonymous.status_code, anonymous.json()) == (200, {"status": "degraded"})
    assert as_shopper.json() == {"status": "degraded"}
    assert with_a_bad_token.json() == {"status": "degraded"}
    assert as_staff.json() == {"status": "degraded", "database": "ok", "redis": "down"}


@pytest.mark.servers
def test_two_thousand_calls_open_one_connection_and_the_answer_is_at_most_a_second_old(
    tmp_path, monkeypatch, settings
):
    # given a database of the test's own, whose connection count nobody else moves
    database = MariaDBServer(tmp_path / "mariadb")
    database.start()
    try:
        link = database.connect()
        link.cursor().execute("CREATE DATABASE coupons_health")
        for name, value in (("HOST", "127.0.0.1"), ("PORT", str(database.port))):
            monkeypatch.setitem(connection.settings_dict, name, value)
        monkeypatch.setitem(connection.settings_dict, "NAME", "coupons_health")
        settings.HEALTH_CACHE_SECONDS = 1.0  # as shipped
        settings.HEALTH_REQUIRED_PROCEDURES = ()  # a bare database: no schema to hold to
        client = client_of()

        def connections_so_far() -> int:
            cursor = link.cursor()
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Connections'")
            return int(cursor.fetchone()[1])

        # when
        before = connections_so_far()
        statuses = [client.get("/healthz").status_code for _ in range(2000)]
        opened = connections_so_far() - before

        # then
        assert statuses == [200] * 2000
        assert opened == 1  # the checker's kept connection
        # The answer is never older than a second: a stopped database is seen within one
        # cache period plus the check's own deadline.
        link.close()
        database.stop()
        time.sleep(settings.HEALTH_CACHE_SECONDS)
        started = time.monotonic()
        down = client.get("/healthz")
        assert (down.status_code, down.json()) == (503, {"status": "down"})
        assert time.monotonic() - started < 1
    finally:
        database.stop()
