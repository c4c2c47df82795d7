"""The schema documents SPEC section 18's routes and refusals (pause, resume, single-use
codes, new customers) with descriptions and examples that match the answers."""

import pytest
import yaml

pytestmark = pytest.mark.django_db

JSON = "application/json"


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker) -> dict:
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def error_codes(schema: dict, path: str, method: str) -> dict[str, list[str]]:
    codes = {}
    for status, response in schema["paths"][path][method]["responses"].items():
        if status.startswith(("4", "5")):
            _envelope, narrowed = response["content"][JSON]["schema"]["allOf"]
            codes[status] = narrowed["properties"]["code"]["enum"]
    return codes


def test_redeem_documents_code_used_paused_and_not_eligible(schema):
    codes = error_codes(schema, "/api/coupons/redeem", "post")
    assert set(codes["409"]) >= {"code_used", "paused", "not_eligible", "sold_out"}
    examples = schema["paths"]["/api/coupons/redeem"]["post"]["responses"]["409"]["content"][JSON][
        "examples"
    ]
    assert examples["code_used"]["value"] == {
        "code": "code_used",
        "detail": "This code has already been used.",
    }


def test_grants_document_paused_and_the_result_lists(schema):
    path = "/api/admin/coupons/{template_id}/grants"
    assert "paused" in error_codes(schema, path, "post")["409"]
    result = schema["components"]["schemas"]["GrantResult"]
    assert {"paused", "not_eligible"} <= set(result["required"])


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_pause_and_resume_are_documented(schema, action):
    operation = schema["paths"][f"/api/admin/coupons/{{template_id}}/{action}"]["post"]
    assert operation["description"]
    assert "200" in operation["responses"]
    assert error_codes(schema, f"/api/admin/coupons/{{template_id}}/{action}", "post")["404"] == [
        "not_found"
    ]


def test_the_codes_routes_are_documented_with_examples(schema):
    path = "/api/admin/coupons/{template_id}/codes"
    create, listing = schema["paths"][path]["post"], schema["paths"][path]["get"]
    assert create["description"] and listing["description"]
    assert create["requestBody"]["content"][JSON]["examples"]
    assert "201" in create["responses"]
    code = schema["components"]["schemas"]["SingleUseCode"]["properties"]
    assert code["used_by"]["nullable"] and code["used_at"]["nullable"]
    assert error_codes(schema, path, "post")["400"] == ["invalid"]
