"""POST /api/coupons/{id}/claim through the real service, MariaDB and Redis."""

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from coupons.issuing import service as issuing
from coupons.issuing.counter_setup import coupon_counter
from coupons.models import CouponTemplate, UserCoupon
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url, redis_counts


@pytest.mark.django_db
def test_claim_returns_201_with_the_user_coupon(user, shopper_client):
    template = CouponTemplateFactory(name="Five off", total=10)

    response = shopper_client.post(claim_url(template))

    assert response.status_code == 201
    coupon = UserCoupon.objects.get()
    body = response.json()
    assert body["id"] == coupon.pk
    assert (body["user_id"], body["template_id"], body["status"], body["used_at"]) == (
        user.pk,
        template.pk,
        "unused",
        None,
    )
    assert body["template"]["name"] == "Five off"
    assert (
        body["created_at"]
        == shopper_client.get("/api/coupons/mine").json()["results"][0]["created_at"]
    )  # what the response shows is what the database kept (milliseconds)
    assert set(body) == {
        "id",
        "user_id",
        "template_id",
        "status",
        "used_at",
        "valid_from",
        "valid_until",
        "source",
        "created_at",
        "updated_at",
        "template",
    }
    template.refresh_from_db()
    assert template.claimed_count == 1
    assert redis_counts(template.pk, user.pk) == [1, 1]


@pytest.mark.django_db
def test_unknown_template_is_404_and_writes_nothing(user, shopper_client):
    response = shopper_client.post("/api/coupons/424242/claim")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert UserCoupon.objects.count() == 0


@pytest.mark.django_db
def test_claim_needs_a_token():
    from rest_framework.test import APIClient

    template = CouponTemplateFactory()
    assert APIClient().post(claim_url(template)).status_code == 401


@pytest.mark.django_db
def test_sold_out_is_409_and_syncs_redis(user, shopper_client):
    template = CouponTemplateFactory(total=1)
    UserCouponFactory(template=template)

    response = shopper_client.post(claim_url(template))

    assert response.status_code == 409
    assert response.json()["code"] == "sold_out"
    assert UserCoupon.objects.filter(user=user).count() == 0
    assert redis_counts(template.pk, user.pk) == [1, 0]


@pytest.mark.django_db
def test_limit_reached_is_409(user, shopper_client):
    template = CouponTemplateFactory(per_user_limit=2)
    assert shopper_client.post(claim_url(template)).status_code == 201
    assert shopper_client.post(claim_url(template)).status_code == 201

    third = shopper_client.post(claim_url(template))

    assert third.status_code == 409
    assert third.json()["code"] == "limit_reached"
    assert UserCoupon.objects.filter(user=user).count() == 2
    assert redis_counts(template.pk, user.pk) == [2, 2]


@pytest.mark.django_db
def test_window_ends_are_inclusive(user, shopper_client, frozen_now):
    now = frozen_now.now()
    template = CouponTemplateFactory(
        valid_from=now, valid_until=now + timedelta(seconds=1), per_user_limit=5
    )

    at_start = shopper_client.post(claim_url(template))
    frozen_now(now + timedelta(seconds=1))
    at_end = shopper_client.post(claim_url(template))
    frozen_now(now + timedelta(seconds=1, milliseconds=1))
    after = shopper_client.post(claim_url(template))
    frozen_now(now - timedelta(milliseconds=1))
    before = shopper_client.post(claim_url(template))

    assert (at_start.status_code, at_end.status_code) == (201, 201)
    assert (after.status_code, after.json()["code"]) == (409, "not_in_window")
    assert (before.status_code, before.json()["code"]) == (409, "not_in_window")
    assert UserCoupon.objects.count() == 2


@pytest.mark.django_db
def test_a_count_redis_got_wrong_refuses_nothing_without_terms_and_the_rebuild_resets_it(
    user, shopper_client
):
    """Redis refuses only with the terms the database showed beside a count; a count it holds
    wrongly sends the claim to the database, and the operator's rebuild resets it."""
    template = CouponTemplateFactory(total=5)
    counter = coupon_counter()
    counter.client.set(counter.count_keys(template.pk, template.incarnation, user.pk)[0], 99)

    response = shopper_client.post(claim_url(template))
    call_command("rebuild_coupon_counters", "--template", str(template.pk), stdout=StringIO())

    assert response.status_code == 201
    assert redis_counts(template.pk, user.pk) == [1, None]
    assert shopper_client.post(claim_url(template)).status_code == 409  # limit 1, from the DB
    assert redis_counts(template.pk, user.pk) == [1, 1]


@pytest.mark.django_db
def test_claim_sql_the_row_lock_is_taken_by_the_last_step_only(user, shopper_client):
    """The transaction is the guarded UPDATE (which takes the template's row lock), the insert,
    and the commit: every read comes before it, every Redis call outside it."""
    from django.test.utils import CaptureQueriesContext

    template = CouponTemplateFactory()
    with CaptureQueriesContext(connection) as queries:
        assert shopper_client.post(claim_url(template)).status_code == 201

    statements = [q["sql"] for q in queries.captured_queries]
    # Inside the test's own transaction atomic() opens a savepoint where the claim
    # transaction begins, and releases it where the claim commits.
    begin = next(i for i, sql in enumerate(statements) if sql.startswith("SAVEPOINT"))
    assert statements[begin + 1].startswith("UPDATE coupon_templates SET claimed_count")
    assert "claimed_count < total" in statements[begin + 1]
    assert statements[begin + 2].startswith("INSERT INTO user_coupons")
    assert statements[begin + 3].startswith("RELEASE SAVEPOINT")
    assert not any("FOR UPDATE" in sql for sql in statements)


@pytest.mark.django_db(transaction=True)
def test_60_users_racing_for_10_coupons_get_exactly_10():
    template = CouponTemplateFactory(total=10)
    users = UserFactory.create_batch(60)

    statuses = run_together(
        [
            lambda user=user: bearer_client(user).post(claim_url(template)).status_code
            for user in users
        ]
    )

    assert sorted(statuses) == [201] * 10 + [409] * 50
    template.refresh_from_db()
    assert template.claimed_count == 10
    assert UserCoupon.objects.filter(template=template).count() == 10
    assert redis_counts(template.pk, users[0].pk)[0] == 10


@pytest.mark.django_db(transaction=True)
def test_one_user_firing_20_claims_with_limit_3_gets_exactly_3():
    template = CouponTemplateFactory(total=100, per_user_limit=3)
    user = UserFactory()

    responses = run_together([lambda: bearer_client(user).post(claim_url(template))] * 20)

    assert sorted(r.status_code for r in responses) == [201] * 3 + [409] * 17
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"limit_reached"}
    assert UserCoupon.objects.filter(user=user).count() == 3
    template.refresh_from_db()
    assert template.claimed_count == 3
    assert redis_counts(template.pk, user.pk) == [3, 3]


@pytest.mark.django_db(transaction=True)
def test_a_claim_waiting_on_the_lock_while_the_window_closes_gets_409(frozen_now):
    """The window is checked with `now` sampled after the row lock, not before it: the
    guarded UPDATE waits for the lock, and the insert after it sees the window closed."""
    now = frozen_now.now()
    template = CouponTemplateFactory(valid_from=now - timedelta(hours=1), valid_until=now)
    user = UserFactory()
    client = bearer_client(user)
    locked = threading.Event()
    release = threading.Event()

    def hold_the_lock() -> None:
        from django.db import transaction

        try:
            with transaction.atomic():
                CouponTemplate.objects.select_for_update().get(pk=template.pk)
                locked.set()
                release.wait(timeout=10)
                frozen_now(now + timedelta(milliseconds=1))  # the window closes meanwhile
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    locked.wait(timeout=10)
    waited_on_the_lock = threading.Event()

    def release_once_the_claim_waits() -> None:
        """Release only once the claim's guarded UPDATE is running (the holder is idle, so
        it can only be waiting): it passed the fast check and queued on the row, so the
        locked path is what answers."""
        try:
            for _ in range(200):
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT COUNT(*) FROM information_schema.processlist"
                        " WHERE info LIKE 'UPDATE coupon_templates SET claimed_count%%'"
                    )
                    if cursor.fetchone()[0]:
                        waited_on_the_lock.set()
                        break
                threading.Event().wait(0.05)
        finally:
            release.set()
            connection.close()

    releaser = threading.Thread(target=release_once_the_claim_waits)
    releaser.start()

    response = client.post(claim_url(template))  # passes the fast check, then waits

    releaser.join()
    assert waited_on_the_lock.is_set()

    holder.join()
    assert response.status_code == 409
    assert response.json()["code"] == "not_in_window"
    assert UserCoupon.objects.count() == 0
    template.refresh_from_db()
    assert template.claimed_count == 0


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["unused", "used", "expired"])
def test_the_claim_answer_is_exactly_what_user_coupon_serializer_documents(state, frozen_now):
    """The claim renders with user_coupon_data (no serializer instance); the schema shows
    UserCouponSerializer. Both give the same for every status, read back or just issued."""
    from coupons.api.serializers import UserCouponSerializer, user_coupon_data

    now = frozen_now.now()
    template = CouponTemplateFactory(type="threshold", value=500, min_amount=2000)
    fresh = issuing.coupon_claim(template_id=template.pk, user_id=UserFactory().pk)
    if state == "used":
        UserCoupon.objects.filter(pk=fresh.pk).update(status="used", used_at=now)
    if state == "expired":
        now = frozen_now(template.valid_until + timedelta(milliseconds=1))
    stored = UserCoupon.objects.select_related("template").get(pk=fresh.pk)

    for coupon in (fresh, stored) if state == "unused" else (stored,):
        documented = UserCouponSerializer(coupon, context={"now": now}).data
        assert user_coupon_data(coupon, now=now) == documented
    assert user_coupon_data(stored, now=now)["status"] == state
