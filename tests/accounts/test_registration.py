"""Shoppers sign themselves up (SPEC section 35): the password rules, a taken name refused
whatever its case, the account signed in and earning the sign-up coupons like any other door,
throttled per address and per name tried, in the caller's language."""

import time

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from coupons.auto_issue.events import signup_tasks  # noqa: F401  (the receiver's module)
from coupons.models import CouponTemplate
from coupons.models.auto_issue import AutoIssueTask
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.throttle_rates import SPEC_DEFAULTS

pytestmark = pytest.mark.django_db
REGISTER = "/api/auth/register"


def register(client, username="carol", password="spring-tea-2026", ip="10.0.0.9", **headers):
    body = {"username": username, "password": password}
    return client.post(REGISTER, body, format="json", REMOTE_ADDR=ip, **headers)


def test_a_shopper_signs_up_is_signed_in_and_earns_the_sign_up_coupon():
    welcome = CouponTemplateFactory(auto_issue=CouponTemplate.AutoIssue.SIGNUP, visibility="hidden")
    client = APIClient()

    answer = register(client)

    assert answer.status_code == 201, answer.json()
    assert answer["Cache-Control"] == "no-store"
    body = answer.json()
    user = get_user_model().objects.get(username="carol")
    assert (body["id"], body["username"]) == (user.pk, "carol")
    assert not (user.is_staff or user.is_superuser) and user.is_active
    assert user.check_password("spring-tea-2026")
    me = client.get("/api/auth/me", HTTP_AUTHORIZATION=f"Bearer {body['access']}")
    assert me.json() == {"id": user.pk, "username": "carol", "is_staff": False}
    # The sign-up coupon's task, written with the account, as for any account.
    assert AutoIssueTask.objects.filter(user_id=user.pk, template=welcome).count() == 1


@pytest.mark.parametrize(
    ("username", "password", "field"),
    [
        ("carol", "short", "password"),
        ("carol", "12345678901", "password"),  # all digits
        ("carol", "password", "password"),  # common
        ("carol", "carol1234", "password"),  # like the username
        ("carol", "x" * 129, "password"),
        ("bad name!", "spring-tea-2026", "username"),
        ("   ", "spring-tea-2026", "username"),
        ("x" * 151, "spring-tea-2026", "username"),
        (12345, "spring-tea-2026", "username"),
    ],
)
def test_a_refused_name_or_password_is_400_naming_the_field(username, password, field):
    answer = register(APIClient(), username=username, password=password)

    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid"
    assert field in answer.json()["fields"]
    assert not get_user_model().objects.filter(is_staff=False, username__startswith="c").exists()


def test_a_taken_name_whatever_its_case_is_refused_in_chinese_and_nothing_changes():
    owner = UserFactory(username="alice")
    owner.set_password("old-password-77")
    owner.save()

    answer = register(APIClient(), username="ALICE", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert answer.status_code == 400
    assert answer.json()["fields"] == {"username": ["此用户名已被使用，请换一个。"]}
    owner.refresh_from_db()
    assert owner.check_password("old-password-77")
    assert get_user_model().objects.filter(username__iexact="alice").count() == 1


def test_a_taken_name_costs_the_time_of_a_new_account(settings):
    """The password is hashed before the name is looked at: the answer's time says nothing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    UserFactory(username="taken")
    client = APIClient()

    def timed(username: str) -> float:
        started = time.perf_counter()
        register(client, username=username)
        return time.perf_counter() - started

    new = min(timed(f"fresh{n}") for n in range(3))
    taken = min(timed("taken") for _ in range(3))

    assert taken > new * 0.5  # PBKDF2 dominates both; an unhashed refusal is ~100x faster


def test_sign_ups_are_throttled_per_address_and_per_name(settings, frozen_now):
    settings.THROTTLE_RATES = {**SPEC_DEFAULTS, "register_ip": "3/h", "register_username": "2/h"}
    client = APIClient()

    by_address = [register(client, username=f"n{n}", ip="10.0.0.1").status_code for n in range(4)]
    by_name = [register(client, username="Same", ip=f"10.0.1.{n}").status_code for n in range(3)]

    assert by_address == [201, 201, 201, 429]
    # The second try is 400 (taken); the third, as "same" folded, is throttled.
    assert by_name == [201, 400, 429]
