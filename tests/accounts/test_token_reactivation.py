"""Tokens issued before a deactivation stay revoked after reactivation (SPEC section 19, issue
16 finding 10): refresh tokens were blacklisted, but access tokens came back to life."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

pytestmark = pytest.mark.django_db

PASSWORD = "pass-word-123"


def obtain(user) -> dict:
    answer = APIClient().post(
        "/api/auth/token", {"username": user.username, "password": PASSWORD}, format="json"
    )
    assert answer.status_code == 200
    return answer.json()


def me(access: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    return client.get("/api/auth/me")


def refresh(token: str):
    return APIClient().post("/api/auth/token/refresh", {"refresh": token}, format="json")


def test_access_tokens_issued_before_a_deactivation_stay_revoked_after_reactivation(user):
    before = obtain(user)
    rotated = refresh(before["refresh"]).json()  # a token of the same login, refreshed
    made_directly = str(AccessToken.for_user(user))

    user.is_active = False
    user.save()
    user.is_active = True
    user.save()

    assert me(before["access"]).status_code == 401
    assert me(rotated["access"]).status_code == 401
    assert me(made_directly).status_code == 401
    assert refresh(rotated["refresh"]).status_code == 401


def test_tokens_issued_after_reactivation_work_and_survive_other_saves(user):
    user.is_active = False
    user.save()
    user.is_active = True
    user.save()

    after = obtain(user)
    user.first_name = "Renamed"
    user.save()

    assert me(after["access"]).status_code == 200
    renewed = refresh(after["refresh"])
    assert renewed.status_code == 200
    assert me(renewed.json()["access"]).status_code == 200


def test_a_second_deactivation_revokes_what_the_first_reactivation_issued(user):
    for _ in range(2):
        pair = obtain(user)
        user.is_active = False
        user.save()
        user.is_active = True
        user.save()
        assert me(pair["access"]).status_code == 401


def test_authentication_still_costs_one_query(user):
    access = obtain(user)["access"]
    user.is_active = False
    user.save()
    user.is_active = True
    user.save()
    fresh = obtain(user)["access"]

    for token, status in [(access, 401), (fresh, 200)]:
        with CaptureQueriesContext(connection) as queries:
            assert me(token).status_code == status
        assert len(queries) == 1
