"""Tokens: 15-minute access, rotating refresh with blacklisting, logout, revocation on a
password change or deactivation, no-store, and 401 (never 500) for odd or orphaned tokens."""

from datetime import timedelta

import jwt
import pytest
from django.conf import settings
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

pytestmark = pytest.mark.django_db

PASSWORD = "pass-word-123"


def obtain(user, password: str = PASSWORD):
    return APIClient().post(
        "/api/auth/token", {"username": user.username, "password": password}, format="json"
    )


def refresh(token: str):
    return APIClient().post("/api/auth/token/refresh", {"refresh": token}, format="json")


def logout(token: str):
    return APIClient().post("/api/auth/logout", {"refresh": token}, format="json")


def me(access: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    return client.get("/api/auth/me")


def test_access_tokens_live_15_minutes_by_default(user):
    pair = obtain(user).json()

    claims = jwt.decode(pair["access"], options={"verify_signature": False})
    issued = jwt.decode(pair["refresh"], options={"verify_signature": False})
    # simplejwt dates the access token's expiry from the refresh token's issue time; its own
    # iat is a moment later, a second later when a second boundary falls in between.
    assert claims["exp"] - issued["iat"] == 15 * 60
    assert claims["iat"] - issued["iat"] in (0, 1)
    assert settings.SIMPLE_JWT["ACCESS_TOKEN_LIFETIME"] == timedelta(minutes=15)


def test_every_token_answer_is_no_store(user):
    pair = obtain(user)
    rotated = refresh(pair.json()["refresh"])
    refused = obtain(user, password="wrong")
    logged_out = logout(rotated.json()["refresh"])

    assert [r.status_code for r in (pair, rotated, refused, logged_out)] == [200, 200, 401, 204]
    assert {r["Cache-Control"] for r in (pair, rotated, refused, logged_out)} == {"no-store"}


def test_refresh_rotates_and_the_used_token_is_blacklisted(user):
    first = obtain(user).json()["refresh"]

    rotated = refresh(first)
    reused = refresh(first)

    assert rotated.status_code == 200
    assert set(rotated.json()) == {"access", "refresh"}
    assert rotated.json()["refresh"] != first
    assert (reused.status_code, reused.json()["code"]) == (401, "authentication_failed")
    assert refresh(rotated.json()["refresh"]).status_code == 200
    assert me(rotated.json()["access"]).status_code == 200


def test_logout_revokes_the_refresh_token(user):
    pair = obtain(user).json()

    answer = logout(pair["refresh"])

    assert (answer.status_code, answer.content) == (204, b"")
    assert refresh(pair["refresh"]).status_code == 401
    assert logout(pair["refresh"]).status_code == 401  # already revoked
    assert me(pair["access"]).status_code == 200  # access tokens simply run out (15 min)


@pytest.mark.parametrize("body", [{}, {"refresh": ""}, {"refresh": "x", "other": 1}])
def test_logout_without_a_refresh_token_is_400(body):
    answer = APIClient().post("/api/auth/logout", body, format="json")
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid")


def test_logout_with_a_bad_token_is_401():
    assert logout("not-a-token").status_code == 401


def test_a_password_change_revokes_every_token_the_user_holds(user):
    pair = obtain(user).json()
    other = obtain(user).json()

    user.set_password("a-new-pass-word-456")
    user.save()

    assert me(pair["access"]).status_code == 401
    assert me(other["access"]).status_code == 401
    assert refresh(pair["refresh"]).status_code == 401
    assert refresh(other["refresh"]).status_code == 401
    # Even setting the old password back does not revive them: they were blacklisted.
    user.set_password(PASSWORD)
    user.save()
    assert refresh(pair["refresh"]).status_code == 401
    fresh = obtain(user).json()
    assert me(fresh["access"]).status_code == 200


def test_deactivation_revokes_every_token_and_reactivation_does_not_revive_refresh(user):
    pair = obtain(user).json()

    user.is_active = False
    user.save()

    assert me(pair["access"]).status_code == 401
    assert refresh(pair["refresh"]).status_code == 401
    user.is_active = True
    user.save()
    assert refresh(pair["refresh"]).status_code == 401


def test_a_refresh_token_of_a_deleted_user_is_401(user):
    token = obtain(user).json()

    user.delete()

    for answer in (refresh(token["refresh"]), me(token["access"])):
        assert (answer.status_code, answer.json()["code"]) == (401, "authentication_failed")


def signed(claims: dict) -> str:
    """A token signed with the server's own key: what only a key holder could send."""
    return jwt.encode(claims, settings.SECRET_KEY, algorithm="HS256")


@pytest.mark.parametrize(
    "user_id",
    ["abc", [1], {"id": 1}, True, 1.5, 10**30, -1, 0, None, "", "１"],
    ids=repr,
)
@pytest.mark.parametrize("token_type", ["access", "refresh"])
def test_tokens_with_odd_user_claims_are_401(user, user_id, token_type):
    model = AccessToken if token_type == "access" else RefreshToken
    token = model.for_user(user)
    claims = dict(token.payload)
    claims["user_id"] = user_id
    forged = signed(claims)

    answer = me(forged) if token_type == "access" else refresh(forged)

    assert answer.status_code == 401
    assert answer.json()["code"] == "authentication_failed"


@pytest.mark.parametrize(
    "change",
    [
        {"jti": ["a"]},
        {"jti": None},
        {"exp": "tomorrow"},
        {"token_type": "access"},
        {"token_type": 7},
        {"hash_password": 1},
    ],
    ids=repr,
)
def test_refresh_tokens_with_odd_claims_are_401(user, change):
    claims = {**RefreshToken.for_user(user).payload, **change}
    assert refresh(signed(claims)).status_code == 401
