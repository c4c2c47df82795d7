"""Claims stay exact whatever happens to Redis or the database. Every Redis here is one the
test started itself."""

import pytest
from django.db import connection

from coupons.issuing.counter_setup import UnavailableCounter, coupon_counter, install_coupon_counter
from coupons.models import UserCoupon
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url, redis_counts, use_counter_at
from tests.support.silent_server import SilentServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.servers
def test_redis_stopped_claims_stay_exact(own_redis):
    template = CouponTemplateFactory(total=10)
    users = UserFactory.create_batch(30)
    own_redis.stop()

    statuses = run_together(
        [
            lambda user=user: bearer_client(user).post(claim_url(template)).status_code
            for user in users
        ]
    )

    assert sorted(statuses) == [201] * 10 + [409] * 20
    template.refresh_from_db()
    assert template.claimed_count == 10
    assert UserCoupon.objects.count() == 10


def test_a_hanging_redis_costs_one_timeout_then_is_skipped(redis_namespace):
    """Each call waits at most the claim timeout, and after the first failure the back-off
    keeps every later request away from Redis: only one connection is ever attempted."""
    server = SilentServer()
    use_counter_at(server.url, prefix=redis_namespace, backoff=60)
    template = CouponTemplateFactory(total=5)
    users = UserFactory.create_batch(8)
    try:
        statuses = [bearer_client(u).post(claim_url(template)).status_code for u in users]
    finally:
        server.close()

    assert statuses == [201] * 5 + [409] * 3
    assert len(server.accepted) == 1


@pytest.mark.servers
def test_flushall_between_waves_stays_exact_and_counters_end_equal_to_the_database(own_redis):
    template = CouponTemplateFactory(total=20, per_user_limit=2)
    users = UserFactory.create_batch(12)

    def wave() -> list[int]:
        return run_together(
            [
                lambda user=user: bearer_client(user).post(claim_url(template)).status_code
                for user in users
            ]
        )

    first = wave()
    own_redis.client().flushall()
    second = wave()
    own_redis.client().flushall()
    third = wave()

    assert sorted(first + second + third) == [201] * 20 + [409] * 16
    template.refresh_from_db()
    assert template.claimed_count == 20
    assert UserCoupon.objects.count() == 20
    # One more (refused) claim per user: Redis ends holding the database's counts (a user's
    # count it never needed to learn stays unknown; it is never above the database's).
    for user in users:
        response = bearer_client(user).post(claim_url(template))
        assert (response.status_code, response.json()["code"]) == (409, "sold_out")
        held = UserCoupon.objects.filter(user=user).count()
        assert redis_counts(template.pk, user.pk) in ([20, held], [20, None])


@pytest.fixture
def failing_inserts():
    """A BEFORE INSERT trigger that makes every new user coupon fail in the database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TRIGGER user_coupons_forced_failure BEFORE INSERT ON user_coupons "
            "FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'forced failure'"
        )

    def remove() -> None:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS user_coupons_forced_failure")

    yield remove
    remove()


@pytest.mark.servers
def test_database_failure_is_500_with_nothing_written_and_counters_restored(
    own_redis, failing_inserts
):
    template = CouponTemplateFactory(total=3)
    user = UserFactory()
    client = bearer_client(user)

    response = client.post(claim_url(template))

    assert response.status_code == 500
    assert response.json() == {"code": "server_error", "detail": "Internal server error."}
    assert UserCoupon.objects.count() == 0
    template.refresh_from_db()
    assert template.claimed_count == 0
    assert redis_counts(template.pk, user.pk) == [0, 0]  # the database's counts, recounted

    failing_inserts()
    assert client.post(claim_url(template)).status_code == 201
    assert redis_counts(template.pk, user.pk) == [1, 1]


def test_a_hanging_redis_costs_a_fast_rejection_one_claim_timeout(redis_namespace):
    """A sold-out claim's only Redis call is a sync, within the claim timeout (0.25 s)."""
    import time

    server = SilentServer()
    use_counter_at(server.url, prefix=redis_namespace)
    template = CouponTemplateFactory(total=1)
    UserCouponFactory(template=template)
    client = bearer_client(UserFactory())
    try:
        started = time.monotonic()
        response = client.post(claim_url(template))
        elapsed = time.monotonic() - started
    finally:
        server.close()

    assert (response.status_code, response.json()["code"]) == (409, "sold_out")
    assert len(server.accepted) == 1
    assert elapsed < 2  # 0.25 s for Redis, the rest is the request itself


def test_a_redis_cluster_that_cannot_be_reached_at_start_costs_claims_nothing(settings):
    """A cluster client asks for the slots when it is built; with no node answering, the
    counter stands aside for the back-off and claims are decided by the database alone."""
    settings.COUPON_COUNTER_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    settings.COUPON_REDIS_CLUSTER = True
    settings.COUPON_COUNTER_BACKOFF = 60
    install_coupon_counter(None)
    template = CouponTemplateFactory(total=2)
    users = UserFactory.create_batch(3)

    statuses = [bearer_client(user).post(claim_url(template)).status_code for user in users]

    assert statuses == [201, 201, 409]
    assert isinstance(coupon_counter(), UnavailableCounter)
    assert UserCoupon.objects.count() == 2
    health = bearer_client(UserFactory(is_staff=True)).get("/healthz").json()
    assert (health["status"], health["redis"]) == ("degraded", "down")
