"""Nothing a client sends is a 500: oversized bodies, deep JSON, impossible dates. And a
domain error code nobody mapped is a logged 500, not a silent 400."""

import io
import logging

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.exceptions import api_exception_handler
from api.parsers import MAX_JSON_DEPTH, BoundedJSONParser, RequestTooLarge
from core.domain_errors import DomainError
from coupons.models import CouponTemplate

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024
TEMPLATE = {
    "name": "Spring",
    "type": "direct",
    "value": 500,
    "total": 10,
    "valid_from": "2026-06-01T00:00:00+08:00",
    "valid_until": "2026-06-30T00:00:00+08:00",
}


def big_json(size: int) -> str:
    return '{"name": "' + "x" * (size - 12) + '"}'


@pytest.mark.parametrize("path", ["/api/auth/token", "/api/admin/coupons", "/api/orders"])
def test_a_body_over_1_mib_is_413_too_large(staff_client, path):
    response = staff_client.post(path, big_json(MIB + 1), content_type="application/json")

    assert response.status_code == 413
    assert response.json() == {"code": "too_large", "detail": f"Request body over {MIB} bytes."}
    assert CouponTemplate.objects.count() == 0


def test_the_staff_file_pages_take_a_body_up_to_8_mib_and_no_other_path_does(client):
    """SPEC section 34: a CSV of 100,000 codes or users is more than 1 MiB."""
    staff_file, other = "/admin/coupons/coupontemplate/1/codes/import/", "/admin/login/"

    def declared(path: str, size: int) -> int:
        return client.generic("POST", path, b"", CONTENT_LENGTH=str(size)).status_code

    assert declared(staff_file, 2 * MIB) == 302  # to the login page: the limit let it by
    assert declared(staff_file, 8 * MIB + 1) == 413
    assert declared(other, 2 * MIB) == 413


def test_a_body_of_exactly_1_mib_is_read(staff_client):
    body = big_json(MIB)
    assert len(body) == MIB
    response = staff_client.post("/api/admin/coupons", body, content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, "invalid")  # not 413


def test_the_django_admin_refuses_a_big_body_with_413_too():
    response = Client().post(
        "/admin/login/", "a=" + "x" * MIB, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413


def test_the_parser_bounds_what_it_reads_whatever_the_content_length_says():
    with pytest.raises(RequestTooLarge):
        BoundedJSONParser().parse(io.BytesIO(big_json(MIB + 1).encode()))


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
@pytest.mark.parametrize("path", ["/api/auth/token", "/api/admin/coupons"])
def test_json_nested_too_deep_is_400(staff_client, path, depth):
    body = "[" * depth + "]" * depth

    response = staff_client.post(path, body, content_type="application/json")

    assert (response.status_code, response.json()["code"]) == (400, "invalid")


def test_json_nested_within_the_limit_is_parsed():
    body = ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH).encode()
    assert BoundedJSONParser().parse(io.BytesIO(body)) is not None


@pytest.mark.parametrize(
    "moment",
    [
        "2024-01-01T12:99:00Z",
        "2024-02-30T00:00:00Z",
        "2024-02-30",
        "2024-01-01T00:00:00+25:00",
        "2024-13-01T00:00:00Z",
        "2024-01-01T24:00:00Z",
    ],
)
@pytest.mark.parametrize("field", ["valid_from", "valid_until"])
def test_impossible_dates_are_400_naming_the_field(staff_client, field, moment):
    create = staff_client.post("/api/admin/coupons", {**TEMPLATE, field: moment}, format="json")

    assert create.status_code == 400
    assert create.json()["code"] == "invalid"
    assert list(create.json()["fields"]) == [field]
    assert CouponTemplate.objects.count() == 0


def test_impossible_dates_in_an_edit_are_400(staff_client):
    created = staff_client.post("/api/admin/coupons", TEMPLATE, format="json").json()
    response = staff_client.patch(
        f"/api/admin/coupons/{created['id']}",
        {"valid_until": "2024-02-30T00:00:00Z"},
        format="json",
    )
    assert (response.status_code, list(response.json()["fields"])) == (400, ["valid_until"])


def test_an_unmapped_domain_error_code_is_a_logged_500_not_a_400(caplog):
    class Unmapped(DomainError):
        code = "nobody_mapped_this"

    with caplog.at_level(logging.ERROR, logger="api.exceptions"):
        response = api_exception_handler(Unmapped(), {"view": object()})

    assert response.status_code == 500
    assert response.data == {"code": "server_error", "detail": "Internal server error."}
    assert ["nobody_mapped_this" in record.getMessage() for record in caplog.records] == [True]


def test_unauthenticated_garbage_never_reaches_a_500():
    client = APIClient()
    odd_name = '{"username": "\\ud800", "password": "\\u0000"}'  # a lone surrogate, a NUL
    for body in ("[" * 5000, '{"username": ' * 3000, odd_name, "\x00" * 100, "1e999999"):
        response = client.post("/api/auth/token", body, content_type="application/json")
        assert response.status_code in {400, 401}, (body[:20], response.status_code)


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        ('{"code": ', "application/json", "JSON 格式错误：第 1 行第 10 列。"),
        (b'{"code": "\xff"}', "application/json", "请求体不是 UTF-8 文本。"),
    ],
)
def test_malformed_json_is_told_in_the_requests_language(
    staff_client, body, content_type, expected
):
    """Issue: the 400 said "JSON 解析错误 - Expecting value: line 1 column 10 (char 9)", half in
    English."""
    answer = staff_client.post(
        "/api/coupons/redeem", body, content_type=content_type, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )

    assert answer.status_code == 400
    assert answer.json()["detail"] == expected
