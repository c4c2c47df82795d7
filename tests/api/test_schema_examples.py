"""Every example answer /api/schema/ documents has the shape of today's real answer (SPEC
section 17, "For integrators"): for each operation with a documented 2xx example, the same
operation is called on the app with real data, and the two must have the same keys at every
level and the same JSON types (a null on either side stands for a nullable value).

An example added to an operation this module cannot call fails the test until a call is added
to `live_answers`, so no example goes unchecked."""

from collections.abc import Iterator
from datetime import timedelta

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import RefreshToken

from core import clock
from orders.models import Category
from tests.support.admin_users import EVERY_STAFF_PERMISSION, staff_with
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserFactory

pytestmark = pytest.mark.django_db

JSON = "application/json"
Operation = tuple[str, str, str]  # path template, method, status


def documented_examples(schema: dict) -> Iterator[tuple[Operation, str, object]]:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2"):
                    continue
                examples = response.get("content", {}).get(JSON, {}).get("examples", {})
                for name, example in examples.items():
                    yield (path, method, status), name, example["value"]


def live_answers() -> dict[Operation, object]:
    """Call every operation once, as an integrator would, on a shop made for the purpose:
    (path template, method, status) -> the JSON answer."""
    shopper, staff = UserFactory(), staff_with(*EVERY_STAFF_PERMISSION)
    as_shopper, as_staff = bearer_client(shopper), bearer_client(staff)
    kitchen = Category.objects.create(name="Kitchen")
    tea_set = ProductFactory(name="Tea set", price=9900, stock=100, category=kitchen)
    chopsticks = ProductFactory(name="Chopsticks", price=1500, stock=100)
    five_off = CouponTemplateFactory(name="Five off", value=500, per_user_limit=3, valid_days=7)
    coded = CouponTemplateFactory(
        name="Spring", code="SPRING-10", type="threshold", value=1000, min_amount=5000
    )
    now = clock.now()
    template_terms = {
        "name": "Ten off over a hundred",
        "type": "threshold",
        "value": 1000,
        "min_amount": 10000,
        "total": 5000,
        "per_user_limit": 1,
        "valid_from": (now - timedelta(hours=1)).isoformat(),
        "valid_until": (now + timedelta(days=7)).isoformat(),
    }
    answers: dict[Operation, object] = {}

    def call(
        client: APIClient,
        method: str,
        path: str,
        url: str,
        status: int,
        body=None,
        *,
        format="json",
    ):
        response = getattr(client, method)(url, body, format=format)
        assert response.status_code == status, (method, url, response.content)
        answers[(path, method, str(status))] = response.json()
        return response.json()

    claimed = call(
        as_shopper,
        "post",
        "/api/coupons/{template_id}/claim",
        f"/api/coupons/{five_off.pk}/claim",
        201,
    )
    call(
        as_shopper, "post", "/api/coupons/redeem", "/api/coupons/redeem", 201, {"code": "SPRING-10"}
    )
    call(as_shopper, "get", "/api/coupons", "/api/coupons", 200)
    call(as_shopper, "get", "/api/coupons/mine", "/api/coupons/mine", 200)
    call(as_shopper, "get", "/api/products", "/api/products", 200)
    lines = [
        {"product_id": tea_set.pk, "quantity": 2},
        {"product_id": chopsticks.pk, "quantity": 1},
    ]
    order = call(
        as_shopper,
        "post",
        "/api/orders",
        "/api/orders",
        201,
        {"items": lines, "coupon_id": claimed["id"]},
    )
    call(as_shopper, "get", "/api/orders", "/api/orders", 200)
    call(as_shopper, "get", "/api/orders/{order_id}", f"/api/orders/{order['id']}", 200)
    call(
        as_shopper,
        "get",
        "/api/orders/coupon-options",
        "/api/orders/coupon-options?amount=30000",
        200,
    )
    call(
        as_shopper,
        "post",
        "/api/orders/coupon-options",
        "/api/orders/coupon-options",
        200,
        {"items": lines},
    )
    call(
        as_shopper,
        "post",
        "/api/orders/{order_id}/pay",
        f"/api/orders/{order['id']}/pay",
        200,
        {"amount": order["pay_amount"]},
    )
    call(
        as_staff,
        "post",
        "/api/admin/orders/{order_id}/refund",
        f"/api/admin/orders/{order['id']}/refund",
        201,
        {"reason": "少发一件", "lines": [{"line_id": order["items"][0]["id"], "quantity": 1}]},
    )
    refund = "/api/admin/orders/{order_id}/refund"
    whole = {"reason": "退货"}
    call(as_staff, "post", refund, f"/api/admin/orders/{order['id']}/refund", 201, whole)
    call(as_staff, "post", refund, f"/api/admin/orders/{order['id']}/refund", 200, whole)
    second = as_shopper.post("/api/orders", {"items": lines}, format="json").json()
    call(
        as_shopper,
        "post",
        "/api/orders/{order_id}/cancel",
        f"/api/orders/{second['id']}/cancel",
        200,
    )
    call(as_shopper, "get", "/api/auth/me", "/api/auth/me", 200)
    call(
        APIClient(),
        "post",
        "/api/auth/register",
        "/api/auth/register",
        201,
        {"username": "carol", "password": "spring-tea-2026"},
    )
    call(
        APIClient(),
        "post",
        "/api/auth/token",
        "/api/auth/token",
        200,
        {"username": shopper.username, "password": "pass-word-123"},
    )
    call(
        APIClient(),
        "post",
        "/api/auth/token/refresh",
        "/api/auth/token/refresh",
        200,
        {"refresh": str(RefreshToken.for_user(shopper))},
    )
    published = call(
        as_staff, "post", "/api/admin/coupons", "/api/admin/coupons", 201, template_terms
    )
    one = f"/api/admin/coupons/{published['id']}"
    call(as_staff, "get", "/api/admin/coupons", "/api/admin/coupons", 200)
    call(as_staff, "get", "/api/admin/coupons/{template_id}", one, 200)
    call(as_staff, "put", "/api/admin/coupons/{template_id}", one, 200, template_terms)
    call(as_staff, "patch", "/api/admin/coupons/{template_id}", one, 200, {"total": 6000})
    call(
        as_staff,
        "post",
        "/api/admin/coupons/{template_id}/grants",
        f"/api/admin/coupons/{coded.pk}/grants",
        200,
        {"user_ids": [shopper.pk], "reason": "Sorry for the late parcel"},
    )
    call(as_staff, "post", "/api/admin/coupons/{template_id}/pause", f"{one}/pause", 200)
    call(as_staff, "post", "/api/admin/coupons/{template_id}/resume", f"{one}/resume", 200)
    codes = "/api/admin/coupons/{template_id}/codes"
    call(as_staff, "post", codes, f"{one}/codes", 201, {"count": 2})
    call(as_staff, "get", codes, f"{one}/codes", 200)
    imports = "/api/admin/coupons/{template_id}/codes/import"
    for status, dry_run in ((200, "true"), (201, "false")):
        merchant_file = SimpleUploadedFile("codes.csv", b"code\nMERCHANT-0001\n")
        body = {"file": merchant_file, "dry_run": dry_run}
        call(as_staff, "post", imports, f"{one}/codes/import", status, body, format="multipart")
    campaign_terms = {
        "name": "双十一",
        "starts_at": now.isoformat(),
        "ends_at": (now + timedelta(days=11)).isoformat(),
        "budget": 500000,
        "template_ids": [published["id"]],
    }
    campaigns = "/api/admin/campaigns"
    campaign = call(as_staff, "post", campaigns, campaigns, 201, campaign_terms)
    call(as_staff, "get", campaigns, campaigns, 200)
    one_campaign = f"{campaigns}/{campaign['id']}"
    call(as_staff, "get", f"{campaigns}/{{campaign_id}}", one_campaign, 200)
    call(as_staff, "patch", f"{campaigns}/{{campaign_id}}", one_campaign, 200, {"budget": 600000})
    return answers  # fmt: skip


def shape_differences(documented: object, live: object, where: str = "$") -> list[str]:
    if documented is None or live is None:  # a nullable value, null on one side
        return []
    if isinstance(documented, dict) and isinstance(live, dict):
        differences = []
        if missing := sorted(set(live) - set(documented)):
            differences.append(f"{where}: the example lacks {missing}")
        if extra := sorted(set(documented) - set(live)):
            differences.append(f"{where}: the answer has no {extra}")
        for key in sorted(set(documented) & set(live)):
            differences += shape_differences(documented[key], live[key], f"{where}.{key}")
        return differences
    if isinstance(documented, list) and isinstance(live, list):
        return [
            difference
            for example_item in documented
            for live_item in live
            for difference in shape_differences(example_item, live_item, f"{where}[]")
        ]
    if type(documented) is not type(live):
        return [f"{where}: {type(documented).__name__} in the example, {type(live).__name__} live"]
    return []


@pytest.fixture
def schema(client) -> dict:
    return yaml.safe_load(APIClient().get("/api/schema/").content)


def test_every_documented_answer_example_has_the_shape_of_the_live_answer(schema):
    examples = list(documented_examples(schema))
    answers = live_answers()

    problems = []
    for operation, name, value in examples:
        if operation not in answers:
            problems.append(f"{operation} {name!r}: no live call for it in this module")
            continue
        problems += [
            f"{operation} {name!r}: {d}" for d in shape_differences(value, answers[operation])
        ]

    assert problems == []
    # The examples this checks: at least the coupon, the order and the product.
    assert {operation for operation, _, _ in examples} >= {
        ("/api/coupons/{template_id}/claim", "post", "201"),
        ("/api/orders/{order_id}", "get", "200"),
        ("/api/products", "get", "200"),
    }


def test_the_shape_check_catches_a_missing_and_a_mistyped_field():
    live = {"id": 1, "items": [{"discount_amount": 35, "quantity": 1}], "paid_at": None}
    stale = {"id": "1", "items": [{"quantity": 1}], "paid_at": "2026-12-01T10:15:03Z"}

    assert shape_differences(stale, live) == [
        "$.id: str in the example, int live",
        "$.items[]: the example lacks ['discount_amount']",
    ]


def every_example(schema: dict) -> Iterator[tuple[str, str, str, object]]:
    """(path, method, where, value) for every request and answer example."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get(JSON, {})
            for example in body.get("examples", {}).values():
                yield path, method, "request", example["value"]
            for status, response in operation["responses"].items():
                content = response.get("content", {}).get(JSON, {})
                for example in content.get("examples", {}).values():
                    yield path, method, status, example["value"]


def values_of(value: object) -> Iterator[object]:
    if isinstance(value, dict):
        for item in value.values():
            yield from values_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from values_of(item)
    else:
        yield value


def test_every_body_and_answer_has_an_example_and_none_is_a_placeholder(schema):
    """A tool fills what has no example with "string" and 0 (before: the login, refresh,
    logout, me, redeem, grant, pay and cart-options bodies)."""
    missing = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get(JSON)
            if body is not None and not body.get("examples"):
                missing.append(f"{method.upper()} {path} request")
            for status, response in operation["responses"].items():
                answer = response.get("content", {}).get(JSON)
                if status.startswith("2") and answer is not None and not answer.get("examples"):
                    missing.append(f"{method.upper()} {path} {status}")
    placeholders = [
        (path, method, where)
        for path, method, where, value in every_example(schema)
        if "string" in list(values_of(value))
    ]

    assert missing == []
    assert placeholders == []


def ids_in(value: object, key: str) -> Iterator[int]:
    """Every value of `key` at any depth (lists of ids included)."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key and isinstance(item, int):
                yield item
            else:
                yield from ids_in(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from ids_in(item, key)


def shown(schema: dict, paths: set[str]) -> list[dict]:
    """The objects the 2xx answer examples of these paths show (a page's results, or the one)."""
    objects = []
    for path, _, where, value in every_example(schema):
        if path in paths and where.startswith("2") and isinstance(value, dict):
            objects += value.get("results", [value])
    return objects


def test_every_id_an_example_names_is_one_an_example_shows(schema):
    """An integrator following an example's id finds it in another example (before: product 3
    of the checkout example was shown nowhere, and every list linked to /api/orders)."""
    examples = list(every_example(schema))
    template_paths = {"/api/coupons", "/api/admin/coupons", "/api/admin/coupons/{template_id}"}
    coupon_paths = {"/api/coupons/mine", "/api/coupons/redeem", "/api/coupons/{template_id}/claim"}
    coupons = shown(schema, coupon_paths)
    templates = {t["id"] for t in shown(schema, template_paths)}
    templates |= {coupon["template"]["id"] for coupon in coupons}
    products = shown(schema, {"/api/products"})
    categories = {product["category"]["id"] for product in products if product["category"]}

    def named(key: str) -> set[int]:
        return {i for *_, value in examples for i in ids_in(value, key)}

    in_category_scopes = {
        i
        for *_, value in examples
        for item in (value.get("results", [value]) if isinstance(value, dict) else [])
        if isinstance(item, dict) and item.get("scope") == "categories"
        for i in item["scope_ids"]
    }
    links = {
        link
        for *_, value in examples
        if isinstance(value, dict)
        for link in (value.get("next"), value.get("previous"))
        if link is not None
    }

    assert named("template_id") <= templates, (named("template_id"), templates)
    assert named("coupon_id") <= {c["id"] for c in coupons}
    assert named("product_id") <= {p["id"] for p in products}, named("product_id")
    assert in_category_scopes <= categories, (in_category_scopes, categories)
    assert links == set()
