"""A token's signature is checked once per process (accounts/authentication.py
`signature_checked`); its expiry and its revocation are still asked on every request."""

import time
from datetime import timedelta

import pytest
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.authentication import signature_checked
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db


def client_with(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_token_seen_before_is_not_decoded_again():
    client = client_with(str(AccessToken.for_user(UserFactory())))
    assert client.get("/api/auth/me").status_code == 200
    hits = signature_checked.cache_info().hits

    assert client.get("/api/auth/me").status_code == 200
    assert signature_checked.cache_info().hits == hits + 1


def test_a_remembered_token_is_refused_once_it_expires():
    token = AccessToken.for_user(UserFactory())
    token.set_exp(lifetime=timedelta(seconds=1))
    client = client_with(str(token))
    assert client.get("/api/auth/me").status_code == 200

    never_seen = AccessToken.for_user(UserFactory())
    never_seen.set_exp(lifetime=timedelta(seconds=1))
    time.sleep(1.1)
    response = client.get("/api/auth/me")

    assert response.status_code == 401
    # the same answer as an expired token this process never saw
    assert response.json() == client_with(str(never_seen)).get("/api/auth/me").json()


def test_a_remembered_token_is_refused_once_its_user_is_deactivated():
    user = UserFactory()
    client = client_with(str(AccessToken.for_user(user)))
    assert client.get("/api/auth/me").status_code == 200

    user.is_active = False
    user.save()  # the account's change forgets the user's facts (accounts/user_facts.py)

    assert client.get("/api/auth/me").status_code == 401


def test_a_forged_token_is_refused_every_time():
    token = str(AccessToken.for_user(UserFactory()))
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    client = client_with(forged)
    assert [client.get("/api/auth/me").status_code for _ in range(2)] == [401, 401]
