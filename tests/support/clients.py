"""API clients as a given user calls."""

from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken


def bearer_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
    return client
