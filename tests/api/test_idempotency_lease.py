"""Idempotency-Key after a failure (SPEC section 19): a key whose request failed or died is a
lease of a minute, not a 24-hour lock, so retrying after a 5xx is safe as the README says."""

import sys
from datetime import timedelta

import MySQLdb
import pytest
from django.db import connection
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from api import idempotency
from api.models import IdempotencyRecord
from ops.database_faults import breaker
from orders import services
from orders.models import Order
from tests.support.factories import ProductFactory, UserFactory

LEASE = timedelta(seconds=60)


def shopper() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(UserFactory())}")
    return client


def checkout(client: APIClient, product, key: str):
    body = {"items": [{"product_id": product.pk, "quantity": 1}]}
    return client.post("/api/orders", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def kill_own_connection() -> None:
    """The database drops this request's connection, as a restart or a network cut does."""
    connection.ensure_connection()
    own_id = connection.connection.thread_id()
    database = connection.settings_dict
    killer = MySQLdb.connect(
        host=database["HOST"] or "127.0.0.1",
        port=int(database["PORT"] or 3306),
        user=database["USER"],
        password=database["PASSWORD"] or "",
    )
    try:
        killer.cursor().execute(f"KILL CONNECTION {own_id}")
    finally:
        killer.close()


@pytest.mark.django_db(transaction=True)
def test_a_503_whose_record_could_not_be_dropped_frees_the_key_within_a_minute(
    frozen_now, monkeypatch
):
    # given: the checkout loses its database connection, so it answers 503, and the database
    # is still away when the idempotency record would be dropped
    client, product = shopper(), ProductFactory(price=100, stock=10)
    real_checkout = services.order_checkout

    def connection_lost(**kwargs):
        kill_own_connection()
        return real_checkout(**kwargs)

    monkeypatch.setattr(services, "order_checkout", connection_lost)
    failed = checkout(client, product, "after-503")
    monkeypatch.setattr(services, "order_checkout", real_checkout)
    # What the server does at the end of every request (the test client does not): a broken
    # connection is closed, the next request opens a new one.
    connection.close()
    breaker.reset()
    started = frozen_now.now()

    # when: the client retries at once, and again a minute later
    too_soon = checkout(client, product, "after-503")
    frozen_now(started + LEASE)
    retried = checkout(client, product, "after-503")

    # then
    assert (failed.status_code, failed.json()["code"]) == (503, "unavailable")
    assert (too_soon.status_code, too_soon.json()["code"]) == (409, "request_in_progress")
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried
    assert Order.objects.count() == 1
    record = IdempotencyRecord.objects.get()
    assert (record.response_status, record.created_at) == (201, started + LEASE)


@pytest.mark.django_db
def test_a_request_that_died_without_an_answer_frees_its_key_after_the_lease(
    frozen_now, monkeypatch
):
    # given: the worker was stopped inside the service (gunicorn's timeout raises SystemExit)
    client, product = shopper(), ProductFactory(price=100, stock=10)
    real_checkout = services.order_checkout
    monkeypatch.setattr(services, "order_checkout", lambda **kwargs: sys.exit(1))
    with pytest.raises(SystemExit):
        checkout(client, product, "died")
    monkeypatch.setattr(services, "order_checkout", real_checkout)
    started = frozen_now.now()

    # when
    frozen_now(started + LEASE - timedelta(seconds=1))
    within_the_lease = checkout(client, product, "died")
    frozen_now(started + LEASE)
    after_the_lease = checkout(client, product, "died")

    # then
    assert (within_the_lease.status_code, within_the_lease.json()["code"]) == (
        409,
        "request_in_progress",
    )
    assert after_the_lease.status_code == 201
    assert Order.objects.count() == 1
    assert IdempotencyRecord.objects.get().response_status == 201


@pytest.mark.django_db
def test_a_completed_answer_is_still_replayed_long_after_the_lease(frozen_now):
    client, product = shopper(), ProductFactory(price=100, stock=10)
    first = checkout(client, product, "done")
    frozen_now(frozen_now.now() + timedelta(hours=23))

    replay = checkout(client, product, "done")

    assert (replay.status_code, replay["Idempotent-Replayed"]) == (201, "true")
    assert replay.json() == first.json()
    assert Order.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_answer_whose_connection_died_before_it_was_kept_is_kept_on_a_new_one(
    frozen_now, monkeypatch
):
    # given: the checkout committed and rendered its 201, then its connection died (the
    # writer switched, as in `make drill`) before the answer was written to the record
    client, product = shopper(), ProductFactory(price=100, stock=10)
    real_finish = idempotency.record_finish

    def connection_lost_first(**kwargs):
        kill_own_connection()
        real_finish(**kwargs)

    monkeypatch.setattr(idempotency, "record_finish", connection_lost_first)
    first = checkout(client, product, "lost-after-commit")
    monkeypatch.setattr(idempotency, "record_finish", real_finish)
    connection.close()
    breaker.reset()

    # when: the client retries after the lease (before, the key stayed "in progress" and the
    # checkout ran a second time)
    frozen_now(frozen_now.now() + LEASE)
    retried = checkout(client, product, "lost-after-commit")

    # then: the first answer again, one order
    assert first.status_code == 201
    assert (retried.status_code, retried.json()["id"]) == (201, first.json()["id"])
    assert retried["Idempotent-Replayed"] == "true"
    assert Order.objects.filter(user_id=first.json()["user_id"]).count() == 1
