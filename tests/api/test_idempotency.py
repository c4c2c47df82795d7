"""Idempotency-Key (SPEC section 12): a retried POST gets the first answer, not a second effect."""

import sys
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import DatabaseError, OperationalError
from django.db.models import F, QuerySet

from api.models import IdempotencyRecord
from coupons.api import views as coupon_views
from coupons.issuing import decision
from coupons.models import CouponTemplate, UserCoupon
from ops.database_faults import breaker as database_breaker
from orders import services
from orders.api import views as order_views
from orders.models import Order, Product
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.snapshots import snapshot


def checkout_body(product, coupon=None) -> dict:
    body = {"items": [{"product_id": product.pk, "quantity": 2}]}
    if coupon is not None:
        body["coupon_id"] = coupon.pk
    return body


def post(client, url: str, body: dict | None = None, *, key: str | None = None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(url, body, format="json", **headers)


@pytest.mark.django_db
def test_a_retried_checkout_replays_the_first_201_instead_of_coupon_used(user, shopper_client):
    # given: the checkout that today answers 409 coupon_used when retried after a lost answer
    product = ProductFactory(price=9900, stock=10)
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=500))
    body = checkout_body(product, coupon)

    # when
    first = post(shopper_client, "/api/orders", body, key="checkout-7f3a")
    retry = post(shopper_client, "/api/orders", body, key="checkout-7f3a")

    # then: the same answer, marked as a replay, and one order, one stock take, one coupon use
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first
    assert retry.status_code == 201
    assert retry["Idempotent-Replayed"] == "true"
    assert retry.json() == first.json()
    order = Order.objects.get()
    assert (order.pk, order.discount_amount, order.coupon_id) == (
        first.json()["id"],
        500,
        coupon.pk,
    )
    assert Product.objects.get().stock == 8
    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.USED
    # without the key the retry is the second checkout it always was
    again = post(shopper_client, "/api/orders", body)
    assert (again.status_code, again.json()["code"]) == (409, "coupon_used")


@pytest.mark.django_db
def test_a_retried_claim_replays_its_coupon(user, shopper_client):
    template = CouponTemplateFactory(total=10, per_user_limit=1)
    url = f"/api/coupons/{template.pk}/claim"

    first = post(shopper_client, url, key="claim-1")
    retry = post(shopper_client, url, key="claim-1")

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert UserCoupon.objects.filter(user=user).count() == 1
    template.refresh_from_db()
    assert template.claimed_count == 1
    other_key = post(shopper_client, url, key="claim-2")
    assert (other_key.status_code, other_key.json()["code"]) == (409, "limit_reached")


@pytest.mark.django_db
def test_an_error_answer_is_kept_and_replayed_too(user, shopper_client):
    # given: a pending order, cancelled with a key
    product = ProductFactory(price=100, stock=5)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    pay_url = f"/api/orders/{order.pk}/pay"

    # when: a wrong amount (409), then the same request again
    first = post(shopper_client, pay_url, {"amount": 1}, key="pay-1")
    retry = post(shopper_client, pay_url, {"amount": 1}, key="pay-1")

    # then
    assert (first.status_code, first.json()["code"]) == (409, "amount_mismatch")
    assert (retry.status_code, retry.json()) == (409, first.json())
    assert retry["Idempotent-Replayed"] == "true"


@pytest.mark.django_db
def test_a_flood_of_refusals_with_fresh_keys_keeps_rows_only_up_to_the_users_rate(
    settings, frozen_now, user, shopper_client
):
    """Issue: 1,000 refused claims with new Idempotency-Keys stored 1,000 rows. A user's
    refusals are kept for replay up to `idempotent_refusals` a minute; past it each is still
    answered, and not kept (running it again is safe: it changed nothing)."""
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "idempotent_refusals": "20/min"}
    sold_out = CouponTemplateFactory(total=1, claimed_count=1)
    url = f"/api/coupons/{sold_out.pk}/claim"

    answers = [post(shopper_client, url, key=f"flood-{n}") for n in range(50)]
    first_again = post(shopper_client, url, key="flood-0")
    last_again = post(shopper_client, url, key="flood-49")

    assert {(a.status_code, a.json()["code"]) for a in answers} == {(409, "sold_out")}
    assert IdempotencyRecord.objects.filter(user=user).count() == 20
    assert first_again["Idempotent-Replayed"] == "true"
    assert (last_again.status_code, last_again.json()["code"]) == (409, "sold_out")
    assert "Idempotent-Replayed" not in last_again


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["cancel", "pay"])
def test_a_missing_order_keeps_no_idempotency_record(user, shopper_client, action):
    """A fresh key per request for an order that does not exist: 404, and no row kept for a
    day (before: one IdempotencyRecord per request)."""
    body = {"amount": 100} if action == "pay" else None

    answers = [
        post(shopper_client, f"/api/orders/{10**12 + n}/{action}", body, key=f"fresh-{n}")
        for n in range(5)
    ]

    assert [answer.status_code for answer in answers] == [404] * 5
    assert {answer.json()["code"] for answer in answers} == {"not_found"}
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db
def test_a_retried_cancel_replays_200_not_invalid_state(user, shopper_client):
    product = ProductFactory(price=100, stock=5)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 2}]
    )
    url = f"/api/orders/{order.pk}/cancel"

    first = post(shopper_client, url, key="cancel-1")
    retry = post(shopper_client, url, key="cancel-1")

    assert (first.status_code, first.json()["status"]) == (200, "cancelled")
    assert (retry.status_code, retry.json()) == (200, first.json())
    assert Product.objects.get().stock == 5  # returned once
    assert post(shopper_client, url).json()["code"] == "invalid_state"


@pytest.mark.django_db
def test_the_same_key_with_another_body_or_path_is_422_and_changes_nothing(user, shopper_client):
    # given: a checkout made with key "k"
    product = ProductFactory(price=100, stock=10)
    other_product = ProductFactory(price=100, stock=10)
    assert post(shopper_client, "/api/orders", checkout_body(product), key="k").status_code == 201
    before = snapshot()

    # when: the key is used for a different body, and for a different path
    changed_body = post(shopper_client, "/api/orders", checkout_body(other_product), key="k")
    changed_path = post(shopper_client, "/api/coupons/1/claim", key="k")

    # then
    for response in (changed_body, changed_path):
        assert response.status_code == 422
        assert response.json() == {
            "code": "idempotency_key_reused",
            "detail": "This Idempotency-Key was already used for a different request "
            "(method, path or body).",
        }
        assert "Idempotent-Replayed" not in response
    assert snapshot() == before
    assert IdempotencyRecord.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_per_user(user, shopper_client):
    product = ProductFactory(price=100, stock=10)
    someone_else = bearer_client(UserFactory())

    mine = post(shopper_client, "/api/orders", checkout_body(product), key="shared-key")
    theirs = post(someone_else, "/api/orders", checkout_body(product), key="shared-key")

    assert (mine.status_code, theirs.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in theirs
    assert mine.json()["id"] != theirs.json()["id"]
    assert Order.objects.count() == 2
    assert Product.objects.get().stock == 6


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "x" * 65, "caf\u00e9", "tab\there", "del\x7f"])
def test_a_bad_key_is_400_naming_the_header_and_nothing_runs(user, shopper_client, key):
    product = ProductFactory(price=100, stock=10)
    before = snapshot()

    response = post(shopper_client, "/api/orders", checkout_body(product), key=key)

    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid",
        "detail": "Invalid Idempotency-Key header.",
        "fields": {
            "Idempotency-Key": ["Must be 1 to 64 printable ASCII characters (space to tilde)."]
        },
    }
    assert snapshot() == before
    assert not IdempotencyRecord.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["k", "x" * 64, "  spaced out ~!@#$%^&*()  "])
def test_keys_of_1_to_64_printable_characters_are_accepted(shopper_client, key):
    product = ProductFactory(price=100, stock=10)
    assert post(shopper_client, "/api/orders", checkout_body(product), key=key).status_code == 201
    replay = post(shopper_client, "/api/orders", checkout_body(product), key=key)
    assert replay["Idempotent-Replayed"] == "true"
    assert IdempotencyRecord.objects.get().key == key


@pytest.mark.django_db
def test_a_5xx_is_not_kept_so_the_retry_runs_for_real(user, shopper_client, monkeypatch):
    # given: the first attempt fails inside the service with an unexpected error
    product = ProductFactory(price=100, stock=10)
    real_checkout = services.order_checkout
    calls = []

    def fail_once(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise RuntimeError("lost the database mid-request")
        return real_checkout(**kwargs)

    monkeypatch.setattr(services, "order_checkout", fail_once)

    # when
    failed = post(shopper_client, "/api/orders", checkout_body(product), key="k5")
    assert not IdempotencyRecord.objects.exists()
    retried = post(shopper_client, "/api/orders", checkout_body(product), key="k5")

    # then
    assert (failed.status_code, failed.json()["code"]) == (500, "server_error")
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried
    assert len(calls) == 2
    assert Order.objects.count() == 1
    assert IdempotencyRecord.objects.get().response_status == 201


@pytest.mark.django_db
def test_an_expired_key_is_a_fresh_key(user, shopper_client, frozen_now):
    # given: key "old" used 24 hours ago for another request
    product = ProductFactory(price=100, stock=10)
    now = frozen_now.now()
    frozen_now(now - timedelta(hours=24))
    assert post(shopper_client, "/api/orders", checkout_body(product), key="old").status_code == 201
    frozen_now(now)

    # when: it comes back with a different body
    response = post(
        shopper_client, "/api/orders", {**checkout_body(product), "coupon_id": None}, key="old"
    )

    # then: it ran as a new request and took the key over
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert Order.objects.count() == 2
    assert IdempotencyRecord.objects.get().created_at == now


@pytest.mark.django_db
def test_purge_deletes_only_records_past_their_lifetime(user, frozen_now, capsys):
    now = frozen_now.now()
    for age_hours, key in [(25, "old"), (24, "just-expired"), (23, "young")]:
        IdempotencyRecord.objects.create(
            user=user,
            key_digest=key.ljust(64, "0"),
            key=key,
            request_digest="0" * 64,
            created_at=now - timedelta(hours=age_hours, seconds=1 if age_hours == 24 else 0),
        )

    call_command("purge_idempotency_records")

    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["young"]
    assert capsys.readouterr().out == "Deleted 2 expired idempotency records.\n"


@pytest.mark.django_db(transaction=True)
def test_a_second_request_while_the_first_runs_is_409_request_in_progress(monkeypatch):
    # given: a checkout that holds inside the service until released
    user = UserFactory()
    product = ProductFactory(price=100, stock=10)
    entered, release = threading.Event(), threading.Event()
    real_checkout = services.order_checkout

    def slow_checkout(**kwargs):
        entered.set()
        assert release.wait(timeout=10)
        return real_checkout(**kwargs)

    monkeypatch.setattr(services, "order_checkout", slow_checkout)
    body = checkout_body(product)
    answers = {}

    def first_request():
        answers["first"] = post(bearer_client(user), "/api/orders", body, key="slow")

    # when: the same key arrives while the first request is inside the service
    thread = threading.Thread(target=first_request)
    thread.start()
    try:
        assert entered.wait(timeout=10)
        meanwhile = post(bearer_client(user), "/api/orders", body, key="slow")
    finally:
        release.set()
        thread.join()

    # then
    assert meanwhile.status_code == 409
    assert meanwhile.json() == {
        "code": "request_in_progress",
        "detail": "A request with this Idempotency-Key is still running; "
        "retry once it has answered.",
    }
    assert answers["first"].status_code == 201
    after = post(bearer_client(user), "/api/orders", body, key="slow")
    assert (after.status_code, after.json()) == (201, answers["first"].json())
    assert after["Idempotent-Replayed"] == "true"
    assert Order.objects.count() == 1
    assert Product.objects.get().stock == 8


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_make_one_claim(frozen_now):
    # given: ten copies of one claim, same user and key, released together
    user = UserFactory()
    template = CouponTemplateFactory(total=100, per_user_limit=5)
    url = f"/api/coupons/{template.pk}/claim"

    def claim():
        response = post(bearer_client(user), url, key="storm")
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    # when
    answers = run_together([claim] * 10)

    # then: one claim happened; everyone else saw it running or got its answer
    assert UserCoupon.objects.filter(user=user).count() == 1
    assert CouponTemplate.objects.get().claimed_count == 1
    created = [body for status, body, replayed in answers if status == 201]
    assert created and all(body == created[0] for body in created)
    assert sum(1 for status, _, replayed in answers if status == 201 and replayed is None) == 1
    assert {body["code"] for status, body, _ in answers if status != 201} <= {"request_in_progress"}
    assert all(status in (201, 409) for status, _, _ in answers)


@pytest.mark.django_db
def test_a_retried_redeem_replays_its_coupon(user, shopper_client):
    CouponTemplateFactory(code="SPRING-26", per_user_limit=2)
    body = {"code": "SPRING-26"}

    first = post(shopper_client, "/api/coupons/redeem", body, key="redeem-1")
    retry = post(shopper_client, "/api/coupons/redeem", body, key="redeem-1")

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert UserCoupon.objects.filter(user=user).count() == 1  # the limit of 2 would allow two


@pytest.mark.django_db
def test_a_retried_grant_replays_its_first_answer(staff_client):
    template = CouponTemplateFactory(total=10)
    shopper = UserFactory()
    url = f"/api/admin/coupons/{template.pk}/grants"
    body = {"user_ids": [shopper.pk], "reason": "Late delivery"}

    first = post(staff_client, url, body, key="grant-1")
    retry = post(staff_client, url, body, key="grant-1")

    assert first.status_code == 200
    assert first.json()["granted"] == [shopper.pk]
    assert (retry.status_code, retry.json()) == (200, first.json())
    assert retry["Idempotent-Replayed"] == "true"
    assert UserCoupon.objects.filter(user=shopper).count() == 1


def answer_writes_fail(monkeypatch) -> None:
    """The database refuses to store any answer (the write after the work's commit); the
    effect's own write inside the work's transaction still goes through."""
    real_update = QuerySet.update

    def failing_update(queryset, **changes):
        if queryset.model is IdempotencyRecord and "response_status" in changes:
            raise DatabaseError("connection lost")
        return real_update(queryset, **changes)

    monkeypatch.setattr(QuerySet, "update", failing_update)


@pytest.mark.django_db
def test_a_checkout_whose_answer_was_lost_is_replayed_from_its_order(
    user, shopper_client, monkeypatch
):
    # given: the checkout committed, then the database refused to store its answer
    product = ProductFactory(price=100, stock=10)
    answer_writes_fail(monkeypatch)
    first = post(shopper_client, "/api/orders", checkout_body(product), key="lost")
    monkeypatch.undo()

    # when: the client retries
    retry = post(shopper_client, "/api/orders", checkout_body(product), key="lost")

    # then: the client heard of its order both times, and there is one order
    assert first.status_code == 201
    assert (retry.status_code, retry["Idempotent-Replayed"]) == (201, "true")
    assert retry.json()["id"] == first.json()["id"] == Order.objects.get().pk
    assert Product.objects.get().stock == 8


@pytest.mark.django_db
def test_a_payment_whose_answer_was_lost_is_replayed_not_invalid_state(
    user, shopper_client, monkeypatch
):
    order = post(shopper_client, "/api/orders", checkout_body(ProductFactory(price=100))).json()
    url = f"/api/orders/{order['id']}/pay"
    answer_writes_fail(monkeypatch)
    first = post(shopper_client, url, {"amount": order["pay_amount"]}, key="pay-lost")
    monkeypatch.undo()

    retry = post(shopper_client, url, {"amount": order["pay_amount"]}, key="pay-lost")

    assert first.status_code == 200
    assert (retry.status_code, retry["Idempotent-Replayed"]) == (200, "true")
    assert retry.json()["status"] == first.json()["status"] == "paid"


@pytest.mark.django_db
def test_a_5xx_after_the_checkout_committed_keeps_the_key_and_the_retry_replays_it(
    user, shopper_client, monkeypatch
):
    # given: the order commits, then the database goes away before the answer is rendered
    product = ProductFactory(price=100, stock=10)
    real_response = order_views.order_response

    def lost_on_the_way_back(*args, **kwargs):
        raise OperationalError(2013, "Lost connection to server during query")

    monkeypatch.setattr(order_views, "order_response", lost_on_the_way_back)
    first = post(shopper_client, "/api/orders", checkout_body(product), key="committed-503")
    monkeypatch.setattr(order_views, "order_response", real_response)
    database_breaker.reset()  # the database is back

    retry = post(shopper_client, "/api/orders", checkout_body(product), key="committed-503")

    # then: the 503 did not drop the record; the retry is the committed order, not a second
    assert first.status_code == 503
    assert (retry.status_code, retry["Idempotent-Replayed"]) == (201, "true")
    assert retry.json()["id"] == Order.objects.get().pk
    assert Product.objects.get().stock == 8


@pytest.mark.django_db(transaction=True)
def test_a_claim_decided_in_the_procedure_records_its_effect_with_its_coupon(monkeypatch):
    # given: a committed claim (the one-call procedure on MySQL) whose answer is lost twice:
    # first the connection on the way back (503), then the write of the answer
    user = UserFactory()
    client = bearer_client(user)
    template = CouponTemplateFactory(total=10, per_user_limit=5)
    url = f"/api/coupons/{template.pk}/claim"
    real_data = coupon_views.user_coupon_data

    def lost_on_the_way_back(*args, **kwargs):
        raise OperationalError(2013, "Lost connection to server during query")

    monkeypatch.setattr(coupon_views, "user_coupon_data", lost_on_the_way_back)
    first = post(client, url, key="claim-across-a-failover")
    monkeypatch.setattr(coupon_views, "user_coupon_data", real_data)
    database_breaker.reset()  # the database is back

    # when: the client retries with the key, long after the lease
    IdempotencyRecord.objects.update(created_at=F("created_at") - timedelta(minutes=30))
    retry = post(client, url, key="claim-across-a-failover")

    # then: the record names the coupon the procedure committed; the retry replays it
    record = IdempotencyRecord.objects.get()
    coupon = UserCoupon.objects.get()
    assert first.status_code == 503
    assert record.effect_id == coupon.pk
    assert (retry.status_code, retry["Idempotent-Replayed"]) == (201, "true")
    assert retry.json()["id"] == coupon.pk
    assert CouponTemplate.objects.get().claimed_count == 1


@pytest.mark.django_db
def test_a_request_stopped_without_an_answer_holds_its_key(user, shopper_client, monkeypatch):
    # given: the worker is stopped inside the service (gunicorn's timeout raises SystemExit);
    # whether its work committed cannot be known from here
    product = ProductFactory(price=100, stock=10)
    monkeypatch.setattr(services, "order_checkout", lambda **kwargs: sys.exit(1))
    with pytest.raises(SystemExit):
        post(shopper_client, "/api/orders", checkout_body(product), key="stopped")
    monkeypatch.undo()

    # when: the client retries
    retry = post(shopper_client, "/api/orders", checkout_body(product), key="stopped")

    # then: it is held off rather than risk a second effect
    assert (retry.status_code, retry.json()["code"]) == (409, "request_in_progress")
    assert Order.objects.count() == 0
    assert IdempotencyRecord.objects.get().response_status is None


@pytest.mark.django_db
def test_an_effect_whose_record_was_taken_over_rolls_back(user, shopper_client, monkeypatch):
    # given: while the checkout runs, its key's record goes (a retry took it after the lease)
    product = ProductFactory(price=100, stock=10)
    real_create = services._order_create

    def record_taken_over(**kwargs):
        IdempotencyRecord.objects.all().delete()
        return real_create(**kwargs)

    monkeypatch.setattr(services, "_order_create", record_taken_over)

    answer = post(shopper_client, "/api/orders", checkout_body(product), key="taken-over")

    # then: its order does not commit beside the retry's
    assert (answer.status_code, answer.json()["code"]) == (409, "request_in_progress")
    assert Order.objects.count() == 0
    assert Product.objects.get().stock == 10


@pytest.mark.django_db(transaction=True)
def test_a_claim_whose_record_was_taken_over_rolls_back_in_the_procedure(monkeypatch):
    user = UserFactory()
    template = CouponTemplateFactory(total=10)
    real_call = decision.decide_in_one_call

    def record_taken_over(*args, **kwargs):
        IdempotencyRecord.objects.all().delete()  # committed: autocommit on "default"
        return real_call(*args, **kwargs)

    monkeypatch.setattr(decision, "decide_in_one_call", record_taken_over)

    answer = post(bearer_client(user), f"/api/coupons/{template.pk}/claim", key="taken-over")

    assert (answer.status_code, answer.json()["code"]) == (409, "request_in_progress")
    assert UserCoupon.objects.count() == 0
    assert CouponTemplate.objects.get().claimed_count == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("valid_days", [None, 7])
def test_an_effect_replayed_reads_as_its_first_answer(valid_days):
    # given: a claim answered, then its stored answer lost (as if the write after it failed)
    user = UserFactory()
    template = CouponTemplateFactory(total=10, valid_days=valid_days)
    url = f"/api/coupons/{template.pk}/claim"
    first = post(bearer_client(user), url, key="same-body")
    IdempotencyRecord.objects.update(response_status=None, response_body=None, completed_at=None)

    # when: it is retried, and rendered again from the coupon the database kept
    retry = post(bearer_client(user), url, key="same-body")

    # then: byte for byte the first answer (times as the DATETIME(3) columns keep them)
    assert (first.status_code, retry.status_code, retry["Idempotent-Replayed"]) == (
        201,
        201,
        "true",
    )
    assert retry.json() == first.json()
