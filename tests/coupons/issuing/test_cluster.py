"""Past one machine (SPEC section 14): two app processes on one database, counting in a real
three-master Redis Cluster that the test starts. Claims stay exact, the counters end in step
with MySQL, and the scripts come back by themselves after SCRIPT FLUSH on every node."""

import hashlib

import pytest
from redis.crc import key_slot
from rest_framework_simplejwt.tokens import AccessToken

from coupons.issuing.counter import LUA_DIR, CouponCounter
from coupons.issuing.counter_setup import install_coupon_counter
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import templates
from tests.support.app_server import AppServer
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.redis_cluster import OwnRedisCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.servers]
SCRIPT_SHAS = [
    hashlib.sha1((LUA_DIR / name).read_bytes()).hexdigest() for name in ("claim.lua", "sync.lua")
]  # the two scripts of every claim: the screen and the record of what the database showed


@pytest.fixture
def redis_cluster(tmp_path):
    cluster = OwnRedisCluster(tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def two_apps(redis_cluster, redis_namespace, tmp_path):
    """Two server processes (one worker, four threads each) whose coupon counter is the
    cluster, under this test's key prefix."""
    environment = {
        "COUPON_COUNTER_REDIS_URL": redis_cluster.url,
        "COUPON_REDIS_CLUSTER": "1",
        "COUPON_REDIS_PREFIX": redis_namespace,
    }
    apps = [AppServer(environment=environment, log=tmp_path / f"app-{n}.log") for n in (1, 2)]
    try:
        for app in apps:
            app.start()
        yield apps
    finally:
        for app in apps:
            app.stop()


def storm(apps: list[AppServer], template, users, repeats: int = 1) -> list[tuple[int, dict]]:
    """Every user claims `repeats` times at once, the requests dealt to the apps in turn."""
    tokens = [str(AccessToken.for_user(user)) for user in users]
    path = f"/api/coupons/{template.pk}/claim"
    calls = [
        lambda n=n, token=token: apps[n % len(apps)].post(path, token)
        for n, token in enumerate(tokens * repeats)
    ]
    return run_together(calls)


def assert_counters_in_step(counter: CouponCounter, template, users) -> None:
    """Redis holds exactly the database's counts: the template's total and each user's (a
    user's count Redis never needed to learn stays unknown)."""
    claimed = CouponTemplate.objects.get(pk=template.pk).claimed_count
    for user in users:
        held = UserCoupon.objects.filter(template=template, user=user).count()
        stored = counter.stored(
            template_id=template.pk, incarnation=template.incarnation, user_id=user.pk
        )
        assert stored.claimed == claimed, user.pk
        assert stored.user in (held, None), user.pk


def test_two_apps_on_a_redis_cluster_stay_exact_through_script_flush(
    redis_cluster, two_apps, redis_namespace
):
    counter = CouponCounter(redis_cluster.client(), prefix=redis_namespace)
    template = CouponTemplateFactory(total=30, per_user_limit=2)
    crowd = UserFactory.create_batch(40)
    eager = UserFactory()  # fires many claims at once from both apps

    # given a storm from both apps while there is room: 20 users once, one user 12 times
    answers = storm(two_apps, template, [*crowd[:20], *[eager] * 12])
    # then: the eager user exactly at the limit (room for all, so the limit alone refuses)
    assert sorted(status for status, _ in answers) == [201] * 22 + [409] * 10
    assert {body["code"] for status, body in answers if status == 409} == {"limit_reached"}
    assert UserCoupon.objects.filter(template=template, user=eager).count() == 2

    # when 20 more users storm the 8 left
    answers = storm(two_apps, template, crowd[20:])
    # then: exactly the total
    assert sorted(status for status, _ in answers) == [201] * 8 + [409] * 12
    assert UserCoupon.objects.filter(template=template).count() == 30
    assert CouponTemplate.objects.get(pk=template.pk).claimed_count == 30
    # One more (refused) claim per user from the other app, answered from Redis's facts.
    refused = storm(list(reversed(two_apps)), template, [*crowd, eager])
    assert {status for status, _ in refused} == {409}
    assert_counters_in_step(counter, template, [*crowd, eager])

    # when the scripts are flushed on every node and staff raise the total (talking to the
    # cluster, as every node of a deployment does): the change takes effect as it returns
    for node in redis_cluster.nodes():
        assert node.script_flush()
        assert node.script_exists(*SCRIPT_SHAS) == [False, False]
    install_coupon_counter(counter)
    templates.coupon_template_edit(template_id=template.pk, changes={"total": 45})
    latecomers = UserFactory.create_batch(25)
    answers = storm(two_apps, template, latecomers)

    # then the apps reloaded the scripts (the counters moved on) and stayed exact
    assert sorted(status for status, _ in answers) == [201] * 15 + [409] * 10
    assert {body["code"] for status, body in answers if status == 409} == {"sold_out"}
    assert CouponTemplate.objects.get(pk=template.pk).claimed_count == 45
    assert UserCoupon.objects.filter(template=template).count() == 45
    refused = storm(two_apps, template, [*latecomers, eager])
    assert {status for status, _ in refused} == {409}
    assert_counters_in_step(counter, template, [*latecomers, eager])
    # redis-py's cluster client loads a script on every master when one reports NOSCRIPT
    for node in redis_cluster.nodes():
        assert node.script_exists(*SCRIPT_SHAS) == [True, True]


def test_the_cluster_spreads_templates_over_masters_and_keeps_each_in_one_slot(
    redis_cluster, redis_namespace
):
    counter = CouponCounter(redis_cluster.client(), prefix=redis_namespace)
    cluster = redis_cluster.client()
    owners = set()
    for template_id in range(1, 31):
        keys = [*counter.count_keys(template_id, "a1b2", 7), *counter.terms_keys(template_id)]
        assert len({key_slot(key.encode()) for key in keys}) == 1
        owners.add(cluster.get_node_from_key(keys[0]).port)
    assert owners == set(redis_cluster.ports)
