"""Auth, the error envelope, health and API docs."""

import pytest
from rest_framework.test import APIClient

from tests.support.helpers import use_counter_at

pytestmark = pytest.mark.django_db


def test_token_obtain_and_refresh_then_use_the_access_token(user):
    client = APIClient()

    pair = client.post(
        "/api/auth/token", {"username": user.username, "password": "pass-word-123"}, format="json"
    )
    assert pair.status_code == 200
    refreshed = client.post(
        "/api/auth/token/refresh", {"refresh": pair.json()["refresh"]}, format="json"
    )
    assert refreshed.status_code == 200

    client.credentials(HTTP_AUTHORIZATION=f"Bearer {refreshed.json()['access']}")
    me = client.get("/api/auth/me")
    assert me.json() == {"id": user.pk, "username": user.username, "is_staff": False}
    assert client.get("/api/admin/coupons").status_code == 403  # authenticated, not staff


def test_wrong_password_is_401_authentication_failed(user):
    response = APIClient().post(
        "/api/auth/token", {"username": user.username, "password": "nope"}, format="json"
    )
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_missing_token_is_401_not_authenticated():
    response = APIClient().get("/api/admin/coupons")
    assert response.status_code == 401
    assert response.json() == {
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided.",
    }
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer not-a-jwt", "Bearer ", "Token abc"])
def test_bad_token_is_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/admin/coupons")
    assert response.status_code == 401
    assert response.json()["code"] in {"authentication_failed", "not_authenticated"}


@pytest.mark.parametrize(
    "body",
    ['{"name": ', "[1, 2", "\x00\x01", '{"name": "x",}'],
)
def test_malformed_json_is_400_invalid(staff_client, body):
    response = staff_client.post("/api/admin/coupons", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_form_encoded_body_is_415(staff_client):
    response = staff_client.post("/api/admin/coupons", "name=x", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "path",
    [
        "/api/admin/coupons/abc",
        "/api/admin/coupons/-1",
        "/api/admin/coupons/99999999999999999999999",
    ],
)
def test_non_numeric_or_huge_ids_are_404_json(staff_client, path):
    response = staff_client.get(path)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_healthz_reports_database_and_redis_to_staff(staff_client):
    response = staff_client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "redis": "ok"}


def test_healthz_is_degraded_not_down_without_redis(redis_namespace, staff_client):
    use_counter_at("redis://127.0.0.1:1/0", prefix=redis_namespace)  # nothing listens on 1
    response = staff_client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "degraded", "database": "ok", "redis": "down"}


def test_openapi_schema_and_offline_docs(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    for path in (
        b"/api/coupons/{template_id}/claim:",
        b"/api/coupons/mine:",
        b"/api/admin/coupons:",
    ):
        assert path in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    # The UI's assets come from our own static files, not a CDN.
    assert b"drf_spectacular_sidecar/swagger-ui-dist" in docs.content
    assert b"cdn.jsdelivr" not in docs.content
