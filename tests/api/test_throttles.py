"""Throttles at their real, low rates (the suite's settings raise them for everything else)."""

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.throttles import Bucket, Rate, throttle_hit, throttle_refund, throttle_take
from api.throttles import backoff as throttle_backoff
from coupons.models import UserCoupon
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.helpers import claim_url
from tests.support.silent_server import SilentServer
from tests.support.throttle_rates import SPEC_DEFAULTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def spec_rates(settings, frozen_now):
    """The SPEC's rates, with the clock frozen so that no run straddles a window's end."""
    settings.THROTTLE_RATES = dict(SPEC_DEFAULTS)
    return settings


def login(client, username: str, password: str = "wrong", ip: str = "10.0.0.1"):
    return client.post(
        "/api/auth/token",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=ip,
    )


def test_the_defaults_are_the_specs():
    from config.settings import base

    assert base.THROTTLE_RATES == SPEC_DEFAULTS


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("10/min", Rate(10, 60)),
        ("30/minute", Rate(30, 60)),
        ("5/s", Rate(5, 1)),
        ("100/5m", Rate(100, 300)),
        ("1000/h", Rate(1000, 3600)),
        ("2/day", Rate(2, 86400)),
    ],
)
def test_rates_parse(text, rate):
    assert Rate.parse(text) == rate


def test_a_bad_rate_is_refused():
    with pytest.raises(ValueError, match="bad throttle rate"):
        Rate.parse("ten a minute")


def test_failed_logins_are_throttled_per_username_and_ip_at_10_a_minute(spec_rates, user):
    client = APIClient()
    answers = [login(client, user.username, ip="10.0.0.1").status_code for _ in range(11)]

    assert answers == [401] * 10 + [429]
    over = login(client, user.username, password="pass-word-123", ip="10.0.0.1")
    assert over.status_code == 429  # even the right password waits at this address
    assert over.json()["code"] == "throttled"
    assert 1 <= int(over["Retry-After"]) <= 60
    assert login(client, user.username, password="pass-word-123", ip="10.9.9.9").status_code == 200
    assert login(client, "someone-else", ip="10.0.0.1").status_code == 401


def test_spellings_of_one_username_share_its_count(spec_rates, user):
    """MySQL's utf8mb4_unicode_ci matches all of these to one account."""
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_username": "4/min"}
    name = "alice"
    UserFactory(username=name)
    client = APIClient()
    spellings = [name, "Alice", "ALICE ", "al\u00edce", " al\u200bice"]

    answers = [login(client, s, ip=f"10.1.0.{i}").status_code for i, s in enumerate(spellings)]

    assert answers == [401] * 4 + [429]


def test_login_is_throttled_per_client_ip_at_300_a_minute(spec_rates):
    client = APIClient()
    answers = [login(client, f"name{i}", ip="10.0.0.7").status_code for i in range(301)]

    assert answers == [401] * 300 + [429]
    assert login(client, "name-new", ip="10.0.0.8").status_code == 401


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(spec_rates):
    spec_rates.REST_FRAMEWORK = {**spec_rates.REST_FRAMEWORK, "NUM_PROXIES": 1}
    spec_rates.TRUSTED_PROXIES = ["127.0.0.1"]
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_ip": "2/min"}
    client = APIClient()

    def via_proxy(name: str, forwarded_for: str) -> int:
        return client.post(
            "/api/auth/token",
            {"username": name, "password": "x"},
            format="json",
            REMOTE_ADDR="127.0.0.1",  # nginx
            HTTP_X_FORWARDED_FOR=forwarded_for,
        ).status_code

    assert [via_proxy(f"n{i}", "203.0.113.5") for i in range(3)] == [401, 401, 429]
    assert via_proxy("n9", "203.0.113.6") == 401


def test_the_django_admin_login_is_throttled_too(spec_rates, staff):
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_username": "3/min"}
    client = Client()

    def attempt(password: str = "wrong"):
        return client.post(
            "/admin/login/?next=/admin/", {"username": staff.username, "password": password}
        )

    answers = [attempt() for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200] * 3  # the form again, with errors
    over = attempt("pass-word-123")
    assert over.status_code == 429
    assert over["Content-Type"].startswith("text/html")  # admin pages never answer JSON
    assert b"Too many login attempts" in over.content
    assert 1 <= int(over["Retry-After"]) <= 60
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db(transaction=True)
def test_claims_are_throttled_per_user_at_60_a_minute(spec_rates):
    template = CouponTemplateFactory(total=1000, per_user_limit=1000)
    user, other = UserFactory(), UserFactory()
    client = bearer_client(user)

    answers = [client.post(claim_url(template)) for _ in range(61)]

    assert [a.status_code for a in answers] == [201] * 60 + [429]
    assert answers[-1].json()["code"] == "throttled"
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert UserCoupon.objects.filter(user=user).count() == 60  # the 61st wrote nothing
    template.refresh_from_db()
    assert template.claimed_count == 60
    assert bearer_client(other).post(claim_url(template)).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_code_redemptions_are_throttled_per_user_at_10_a_minute(spec_rates):
    """Unknown codes count too: the limit is what keeps hidden templates' codes from being
    guessed."""
    template = CouponTemplateFactory(total=100, per_user_limit=100, code="SPRING-10")
    user, other = UserFactory(), UserFactory()
    client = bearer_client(user)

    def redeem(client, code: str):
        return client.post("/api/coupons/redeem", {"code": code}, format="json")

    answers = [redeem(client, "SPRING-10") for _ in range(5)]
    answers += [redeem(client, f"GUESS-{n}") for n in range(5)]
    over = redeem(client, "SPRING-10")

    assert [a.status_code for a in answers] == [201] * 5 + [404] * 5
    assert (over.status_code, over.json()["code"]) == (429, "throttled")
    assert 1 <= int(over["Retry-After"]) <= 60
    assert UserCoupon.objects.filter(template=template, user=user).count() == 5
    assert redeem(bearer_client(other), "SPRING-10").status_code == 201


def test_the_window_ends_when_retry_after_says(spec_rates):
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "claim": "2/min"}
    start = 1_800_000_000.0 + 15  # 15 s into a minute window

    hits = [throttle_hit(scope="claim", identity="u1", now=start + i) for i in range(3)]
    assert hits == [None, None, 43.0]  # the third comes 17 s in; the window ends 43 s later
    assert throttle_hit(scope="claim", identity="u1", now=start + 45) is None  # next window


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_with_redis_stopped_throttles_let_claims_through_and_log_once(
    spec_rates, own_redis, caplog
):
    """The claim throttle is counted in the claim's own Redis round trip (the coupon
    counter's): with Redis stopped, claims pass and the counter logs once for its back-off."""
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "claim": "1/min"}
    template = CouponTemplateFactory(total=10, per_user_limit=10)
    client = bearer_client(UserFactory())
    own_redis.stop()

    with caplog.at_level(logging.WARNING, logger="coupons.issuing.counter"):
        statuses = [client.post(claim_url(template)).status_code for _ in range(5)]

    assert statuses == [201] * 5
    assert len([r for r in caplog.records if r.name == "coupons.issuing.counter"]) == 1


@pytest.mark.django_db(transaction=True)
def test_a_hanging_throttle_redis_costs_one_timeout_then_is_skipped(spec_rates):
    """After one failure the throttles keep away from Redis for THROTTLE_REDIS_BACKOFF: a
    throttled request gains no Redis round trip while Redis is down (here code redemptions;
    the counter's Redis is the shared, healthy one)."""
    server = SilentServer()
    spec_rates.CACHES = {
        **spec_rates.CACHES,
        "default": {**spec_rates.CACHES["default"], "LOCATION": server.url},
    }
    spec_rates.THROTTLE_REDIS_BACKOFF = 60
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "redeem": "100/min"}
    CouponTemplateFactory(total=8, per_user_limit=8, code="HANG-8")
    client = bearer_client(UserFactory())
    try:
        statuses = [
            client.post("/api/coupons/redeem", {"code": "HANG-8"}, format="json").status_code
            for _ in range(8)
        ]
    finally:
        server.close()

    assert statuses == [201] * 8
    assert len(server.accepted) == 1


def take_in_redis(buckets, now):
    return throttle_take(buckets, now=now, bounds_guessing=True)


def take_in_process(buckets, now):
    """What throttle_take does while Redis is away (its back-off skipping Redis)."""
    throttle_backoff.failed(RuntimeError("Redis away, for the test"))
    try:
        return throttle_take(buckets, now=now, bounds_guessing=True)
    finally:
        throttle_backoff.reset()


@pytest.mark.parametrize("take", [take_in_redis, take_in_process])
def test_buckets_taken_together_count_a_sliding_minute(spec_rates, take):
    """Every bucket counts the attempts of its last minute, in Redis as in this process: no
    burst across a minute's edge doubles a ceiling, and a refused attempt counts nowhere."""
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_ip": "5/min", "login_username": "4/min"}
    start = 1_800_000_000.0  # a minute's edge
    ip, alice = Bucket("login_ip", "10.0.0.9"), Bucket("login_username", "alice")

    before = [take([ip], start - 1).wait for _ in range(3)]
    across = [take([ip, alice], start + 1).wait for _ in range(3)]
    later = take([ip, alice], start + 58.5).wait  # the first three are still in the minute
    after = take([ip, alice], start + 59).wait  # they left it at 59 s
    alice_full = [take([alice], start + 59.5).wait for _ in range(2)]

    assert before == [None] * 3
    assert across == [None, None, 58.0]  # the oldest leaves at 59 s
    assert later == pytest.approx(0.5)
    assert after is None
    assert alice_full == [None, pytest.approx(1.5)]  # alice: 2 across, 1 after, 1 here


@pytest.mark.parametrize("take", [take_in_redis, take_in_process])
def test_a_refunded_attempt_leaves_every_bucket_it_was_counted_in(spec_rates, take):
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_ip": "2/min", "login_username": "2/min"}
    ip, bob = Bucket("login_ip", "10.0.0.10"), Bucket("login_username", "bob")
    now = 1_800_000_000.0

    first = take([ip, bob], now)
    throttle_refund(first)  # where it was counted: in Redis, or in this process
    two_more = [take([ip, bob], now).wait for _ in range(3)]

    assert two_more == [None, None, 60.0]


def test_concurrent_attempts_pass_a_ceiling_exactly_as_often_as_it_allows(spec_rates):
    """320 failures at once from one address against a ceiling of 300: 300 pass."""
    spec_rates.THROTTLE_RATES = {**SPEC_DEFAULTS, "login_ip": "300/min"}
    now = 1_800_000_000.0 + 59.9  # at a minute's edge, where a fixed window would reset

    def attempt(index: int) -> bool:
        moment = now + (index % 2) * 0.2  # half of them after the edge
        return throttle_take([Bucket("login_ip", "10.0.0.11")], now=moment).wait is None

    with ThreadPoolExecutor(max_workers=32) as pool:
        passed = list(pool.map(attempt, range(320)))

    assert passed.count(True) == 300
