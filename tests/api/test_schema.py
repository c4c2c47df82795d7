"""What /api/schema/ says, read as a client would (SPEC section 12, "The API description is
true"): lists as pages, nullable fields, enums, the error envelope with each operation's codes,
the Idempotency-Key header where it is accepted, and the Swagger UI keeping its token."""

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


def component(schema: dict, ref: dict) -> dict:
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def response_schema(schema: dict, path: str, method: str, status: str) -> dict:
    return schema["paths"][path][method]["responses"][status]["content"][JSON]["schema"]


def error_codes(schema: dict, path: str, method: str) -> dict[str, list[str]]:
    """Status -> the codes the operation documents for it."""
    codes = {}
    for status, response in schema["paths"][path][method]["responses"].items():
        if status.startswith(("4", "5")):
            envelope, narrowed = response["content"][JSON]["schema"]["allOf"]
            assert envelope == {"$ref": "#/components/schemas/Error"}
            codes[status] = narrowed["properties"]["code"]["enum"]
    return codes


@pytest.mark.parametrize(
    ("path", "item"),
    [
        ("/api/coupons", "ShopperTemplate"),
        ("/api/coupons/mine", "UserCoupon"),
        ("/api/orders", "Order"),
        ("/api/admin/coupons", "AdminTemplate"),
        ("/api/orders/coupon-options", "CouponOption"),
        ("/api/products", "Product"),
    ],
)
def test_lists_are_documented_as_pages(schema, path, item):
    page = component(schema, response_schema(schema, path, "get", "200"))

    assert page["required"] == ["count", "next", "previous", "results"]
    assert page["properties"]["results"] == {
        "type": "array",
        "items": {"$ref": f"#/components/schemas/{item}"},
    }
    assert page["properties"]["next"]["nullable"] is True
    parameters = {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"]}
    assert parameters["page"] == {"type": "integer", "minimum": 1, "maximum": 999_999_999}
    assert parameters["page_size"] == {"type": "integer", "minimum": 1, "maximum": 999_999_999}


def test_nullable_fields_and_enums(schema):
    components = schema["components"]["schemas"]
    coupon = components["UserCoupon"]["properties"]
    assert coupon["used_at"]["nullable"] is True
    assert components["CouponStatusEnum"]["enum"] == ["unused", "used", "expired"]
    assert coupon["status"]["allOf"] == [{"$ref": "#/components/schemas/CouponStatusEnum"}]
    assert components["ShopperStateEnum"]["enum"] == [
        "not_started",
        "ended",
        "paused",
        "not_eligible",
        "sold_out",
        "limit_reached",
        "claimable",
    ]
    assert components["CouponTypeEnum"]["enum"][:2] == ["direct", "threshold"]
    assert components["OrderStatusEnum"]["enum"][0] == "pending_payment"
    order = components["Order"]["properties"]
    assert order["paid_at"]["nullable"] and order["cancelled_at"]["nullable"]
    assert order["coupon_id"]["nullable"]


def test_the_claim_documents_every_error_it_may_answer(schema):
    assert error_codes(schema, "/api/coupons/{template_id}/claim", "post") == {
        "400": ["invalid"],  # a malformed Idempotency-Key
        "401": ["authentication_failed", "not_authenticated"],
        "404": ["not_found"],
        "409": [
            "budget_exhausted",
            "limit_reached",
            "not_eligible",
            "not_in_window",
            "paused",
            "request_in_progress",
            "sold_out",
        ],
        "413": ["too_large"],
        "422": ["idempotency_key_reused"],
        "429": ["throttled"],
        "503": ["unavailable"],
    }
    examples = schema["paths"]["/api/coupons/{template_id}/claim"]["post"]["responses"]["409"][
        "content"
    ][JSON]["examples"]
    assert examples["sold_out"]["value"] == {
        "code": "sold_out",
        "detail": "This coupon is sold out.",
    }


def test_staff_routes_document_403_and_checkout_its_conflicts(schema):
    assert error_codes(schema, "/api/admin/coupons", "post")["403"] == ["permission_denied"]
    assert error_codes(schema, "/api/admin/coupons/{template_id}", "get")["403"] == [
        "permission_denied"
    ]
    checkout = error_codes(schema, "/api/orders", "post")
    assert checkout["409"] == [
        "budget_exhausted",
        "coupon_expired",
        "coupon_not_applicable",
        "coupon_used",
        "not_eligible",
        "out_of_stock",
        "request_in_progress",
        "threshold_not_met",
        "too_many_unpaid_orders",
    ]
    assert checkout["415"] == ["unsupported_media_type"]
    assert checkout["429"] == ["throttled"]
    assert error_codes(schema, "/api/orders", "get") == {
        "400": ["invalid"],  # page / page_size
        "401": ["authentication_failed", "not_authenticated"],
        "503": ["unavailable"],
    }
    assert error_codes(schema, "/api/auth/token", "post")["429"] == ["throttled"]


def test_the_error_envelope_is_a_component(schema):
    assert schema["components"]["schemas"]["Error"] == {
        "type": "object",
        "description": "Every error answer. `code` is stable and machine-readable; `detail` is "
        "for people; `fields` (400 `invalid` only) maps each bad input to its messages, nested "
        "like the input for nested bodies.",
        "properties": {
            "code": {"type": "string"},
            "detail": {"type": "string"},
            "fields": {"type": "object", "additionalProperties": {}},
        },
        "required": ["code", "detail"],
    }


def test_idempotency_key_is_documented_exactly_where_it_is_accepted(schema):
    accepting = {
        (path, method)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
    }
    assert accepting == {
        ("/api/coupons/{template_id}/claim", "post"),
        ("/api/coupons/redeem", "post"),
        ("/api/admin/coupons/{template_id}/grants", "post"),
        ("/api/orders", "post"),
        ("/api/orders/{order_id}/cancel", "post"),
        ("/api/orders/{order_id}/pay", "post"),
        ("/api/admin/orders/{order_id}/refund", "post"),
    }
    created = schema["paths"]["/api/orders"]["post"]["responses"]["201"]
    assert created["headers"]["Idempotent-Replayed"]["schema"] == {
        "type": "string",
        "enum": ["true"],
    }


def test_token_answers_and_requests_are_separate_shapes(schema):
    request = schema["paths"]["/api/auth/token"]["post"]["requestBody"]["content"][JSON]
    answer = response_schema(schema, "/api/auth/token", "post", "200")
    assert set(component(schema, request["schema"])["required"]) == {"username", "password"}
    assert set(component(schema, answer)["required"]) == {"access", "refresh"}


def test_swagger_ui_keeps_its_token_across_reloads(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b'"persistAuthorization": true' in page.content


@pytest.mark.django_db
def test_examples_speak_the_requests_language_and_work_against_the_demo():
    """Issue: the 400 example was English under zh-hans, the 415 example showed a raw
    `{media_type}`, the login example's password got 401 and the redemption's code 404."""
    from rest_framework.test import APIClient

    from accounts.demo_users import DEMO_PASSWORD

    in_chinese = yaml.safe_load(
        APIClient().get("/api/schema/", HTTP_ACCEPT_LANGUAGE="zh-hans").content
    )
    redeem = in_chinese["paths"]["/api/coupons/redeem"]["post"]
    options = in_chinese["paths"]["/api/auth/token/refresh"]["post"]

    def example(status: str, code: str) -> dict:
        return options["responses"][status]["content"][JSON]["examples"][code]["value"]

    assert example("400", "invalid")["detail"] == "输入无效。"
    assert "{" not in example("415", "unsupported_media_type")["detail"]
    assert "text/plain" in example("415", "unsupported_media_type")["detail"]
    login = in_chinese["paths"]["/api/auth/token"]["post"]["requestBody"]["content"][JSON]
    assert any(
        item["value"].get("password") == DEMO_PASSWORD for item in login["examples"].values()
    )
    codes = [
        item["value"]["code"]
        for item in redeem["requestBody"]["content"][JSON]["examples"].values()
    ]
    assert codes == ["WELCOME7"]  # a code seed_demo publishes
