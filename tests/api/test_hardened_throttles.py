"""Throttles added against the second attack (SPEC section 19, issue 16 findings 2, 6, 8):
token refresh per user, redemption per client IP, a per-process limit on code guesses while
Redis is down, and the client IP taken from X-Forwarded-For only behind a configured proxy."""

import json
import os
import secrets
import urllib.error
import urllib.request

import jwt
import pytest
from rest_framework.test import APIClient

from coupons.models import UserCoupon
from tests.support.app_server import AppServer
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pass-word-123"


@pytest.fixture
def real_rates(settings, frozen_now):
    settings.THROTTLE_RATES = {
        **settings.THROTTLE_RATES,
        "refresh": "30/min",
        "redeem": "10/min",
        "redeem_ip": "60/min",
    }
    return settings


def redeem(client, code: str, ip: str = "10.0.0.1"):
    return client.post("/api/coupons/redeem", {"code": code}, format="json", REMOTE_ADDR=ip)


def refresh(token: str, ip: str = "10.0.0.1"):
    return APIClient().post(
        "/api/auth/token/refresh", {"refresh": token}, format="json", REMOTE_ADDR=ip
    )


def test_token_refresh_is_throttled_per_user_at_30_a_minute(real_rates):
    user, other = UserFactory(), UserFactory()
    chain = (
        APIClient()
        .post("/api/auth/token", {"username": user.username, "password": PASSWORD}, format="json")
        .json()["refresh"]
    )

    answers = []
    for n in range(31):
        answer = refresh(chain, ip=f"10.6.0.{n}")  # another address each time: per user
        answers.append(answer.status_code)
        if answer.status_code == 200:
            chain = answer.json()["refresh"]

    assert answers == [200] * 30 + [429]
    assert refresh(chain).json()["code"] == "throttled"
    other_chain = (
        APIClient()
        .post("/api/auth/token", {"username": other.username, "password": PASSWORD}, format="json")
        .json()["refresh"]
    )
    assert refresh(other_chain).status_code == 200


def test_forged_refresh_tokens_do_not_spend_the_users_refresh_budget(real_rates):
    """Only a token we signed counts against its user: anyone can write a user_id."""
    user = UserFactory()
    forged = jwt.encode(
        {"token_type": "refresh", "user_id": user.pk, "jti": "x", "exp": 4_000_000_000},
        "not-our-key-but-long-enough-for-hs256-0123456789",
        algorithm="HS256",
    )

    assert [refresh(forged).status_code for _ in range(40)] == [401] * 40
    chain = (
        APIClient()
        .post("/api/auth/token", {"username": user.username, "password": PASSWORD}, format="json")
        .json()["refresh"]
    )
    assert refresh(chain).status_code == 200


def test_dead_refresh_tokens_do_not_spend_the_owners_refresh_budget(real_rates):
    """A refresh token already used (blacklisted) or logged out, sent from many addresses:
    401 each, and the owner's live chain still refreshes (before: 429 after 30)."""
    user = UserFactory()
    login = {"username": user.username, "password": PASSWORD}
    used = APIClient().post("/api/auth/token", login, format="json").json()["refresh"]
    chain = refresh(used).json()["refresh"]  # `used` is now blacklisted
    logged_out = APIClient().post("/api/auth/token", login, format="json").json()["refresh"]
    assert (
        APIClient().post("/api/auth/logout", {"refresh": logged_out}, format="json").status_code
        == 204
    )

    dead = [refresh(used, ip=f"10.7.0.{n}").status_code for n in range(30)]
    dead += [refresh(logged_out, ip=f"10.7.1.{n}").status_code for n in range(10)]

    assert dead == [401] * 40
    assert refresh(chain).status_code == 200
    # Dead tokens are counted per address instead: one address cannot try them forever.
    from_one_address = [refresh(used, ip="10.7.2.1").status_code for _ in range(31)]
    assert from_one_address == [401] * 30 + [429]


@pytest.mark.django_db(transaction=True)
def test_code_redemption_is_throttled_per_client_ip_at_60_a_minute(real_rates):
    """Eight accounts on one address may not guess 80 codes a minute between them."""
    template = CouponTemplateFactory(total=1000, per_user_limit=1000, code="SPRING-10")
    clients = [bearer_client(UserFactory()) for _ in range(8)]

    answers = [
        redeem(client, f"GUESS-{n}-{i}").status_code
        for i, client in enumerate(clients)
        for n in range(8)
    ]

    assert answers == [404] * 60 + [429] * 4
    assert redeem(clients[0], "SPRING-10").status_code == 429
    assert redeem(clients[0], "SPRING-10", ip="10.0.0.2").status_code == 201
    assert UserCoupon.objects.filter(template=template).count() == 1


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_with_redis_stopped_code_guesses_meet_a_per_process_limit(real_rates, own_redis):
    template = CouponTemplateFactory(total=100, per_user_limit=100, code="SPRING-10")
    user = UserFactory()
    client = bearer_client(user)
    own_redis.stop()

    guesses = [redeem(client, f"GUESS-{n}").status_code for n in range(60)]

    assert guesses == [404] * 10 + [429] * 50
    assert redeem(bearer_client(UserFactory()), "SPRING-10", ip="10.0.0.2").status_code == 201
    assert UserCoupon.objects.filter(template=template, user=user).count() == 0


def test_without_num_proxies_the_socket_address_is_the_client():
    from config.settings import base

    assert "NUM_PROXIES" not in os.environ
    assert base.REST_FRAMEWORK["NUM_PROXIES"] == 0


def post_json(base: str, path: str, body: dict, headers: dict) -> int:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_the_production_server_reached_directly_ignores_forwarded_for(tmp_path, own_redis):
    """The shipped server under the production settings, no proxy in front and NUM_PROXIES unset: a
    client that writes its own X-Forwarded-For on every try still meets the per-IP limit."""
    server = AppServer(
        environment={
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "REDIS_URL": own_redis.url,
            "SECURE_COOKIES": "false",
            "NUM_PROXIES": "",
            # A low limit (each try costs the production password hasher, about a second
            # here) over a window, aligned to the epoch, that this run cannot straddle: the
            # server's clock is the real one.
            "THROTTLE_LOGIN_IP": "3/7d",
        },
        log=tmp_path / "server.log",
    )
    server.start()
    try:
        answers = [
            post_json(
                server.base,
                "/api/auth/token",
                {"username": f"nobody{n}", "password": "wrong"},
                {"X-Forwarded-For": f"198.51.100.{n}"},
            )
            for n in range(4)
        ]
    finally:
        server.stop()

    assert answers == [401] * 3 + [429]
