"""The API docs' examples followed against a new `make run` demo, in the order a newcomer would
(run by tests/api/test_demo_walkthrough.py in a process of its own, under `make run`'s local
settings on a new SQLite database): log in with the login example, claim the template the
claimed-coupon example names, check out with the checkout example, pay, ask for coupon
options, read products and, as staff, a template, a grant, the campaign and a refund. Each
answer must be the documented example, times apart. Prints what differs and exits 1."""

import io
import json
import sys

import django

TIMES = {
    "created_at",
    "updated_at",
    "valid_from",
    "valid_until",
    "expire_at",
    "paid_at",
    "used_at",
    "cancelled_at",
    "refunded_at",
    "starts_at",
    "ends_at",
}
JSON = "application/json"


def differences(live, example, where: str = "") -> list[str]:
    """Where `live` is not `example`: every key the example shows, times apart."""
    if isinstance(example, dict):
        if not isinstance(live, dict):
            return [f"{where}: {live!r} is not an object"]
        found = []
        for key, value in example.items():
            if key in TIMES:
                continue
            if key not in live:
                found.append(f"{where}.{key}: missing")
            else:
                found += differences(live[key], value, f"{where}.{key}")
        return found
    if isinstance(example, list):
        if not isinstance(live, list) or len(live) != len(example):
            return [f"{where}: {live!r} != {example!r}"]
        return [
            d
            for i, (a, b) in enumerate(zip(live, example, strict=True))
            for d in differences(a, b, f"{where}[{i}]")
        ]
    return [] if live == example else [f"{where}: {live!r} != {example!r}"]


def main() -> int:
    django.setup()
    import yaml
    from django.core.management import call_command
    from rest_framework.test import APIClient

    call_command("migrate", verbosity=0)
    call_command("seed_demo_products", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())

    def client(token: str | None = None) -> APIClient:
        api = APIClient(HTTP_HOST="127.0.0.1", HTTP_ACCEPT_LANGUAGE="zh-hans")
        if token:
            api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return api

    schema = yaml.safe_load(client().get("/api/schema/").content)

    def operation(path: str, method: str) -> dict:
        return schema["paths"][path][method]

    def request_example(path: str, method: str, name: str | None = None) -> dict:
        content = operation(path, method)["requestBody"]["content"]
        examples = next(iter(content.values()))["examples"]
        chosen = examples[name] if name else next(iter(examples.values()))
        return chosen["value"]

    def answer_examples(path: str, method: str, status: str) -> list[dict]:
        examples = operation(path, method)["responses"][status]["content"][JSON]["examples"]
        return [example["value"] for example in examples.values()]

    def answer_example(path: str, method: str, status: str) -> dict:
        return answer_examples(path, method, status)[0]

    problems: list[str] = []

    def check(what: str, answer, status: int, example=None, live=None) -> dict:
        if answer.status_code != status:
            problems.append(f"{what}: {answer.status_code} {answer.content[:300]!r}")
            return {}
        body = answer.json() if answer.content else {}
        if example is not None:
            problems.extend(f"{what}{d}" for d in differences(live or body, example))
        return body

    def log_in(username: str) -> str:
        body = request_example("/api/auth/token", "post") | {"username": username}
        return check(
            f"login {username}", client().post("/api/auth/token", body, format="json"), 200
        )["access"]

    alice = client(log_in("alice"))
    check("me", alice.get("/api/auth/me"), 200, answer_example("/api/auth/me", "get", "200"))
    claimed = answer_example("/api/coupons/{template_id}/claim", "post", "201")
    template_id = claimed["template_id"]
    check("claim", alice.post(f"/api/coupons/{template_id}/claim"), 201, claimed)
    listed = answer_example("/api/coupons", "get", "200")["results"][0]
    page = check("shopper list", alice.get("/api/coupons", {"page_size": 50}), 200)
    shown = next((t for t in page.get("results", []) if t["id"] == listed["id"]), None)
    problems.extend(f"shopper list{d}" for d in differences(shown, listed))
    products = check("products", alice.get("/api/products"), 200).get("results", [])
    for example in operation("/api/products", "get")["responses"]["200"]["content"][JSON][
        "examples"
    ].values():
        for product in example["value"]["results"]:
            live = next((p for p in products if p["id"] == product["id"]), None)
            problems.extend(f"product {product['id']}{d}" for d in differences(live, product))
    checkout = request_example("/api/orders", "post")
    order = check(
        "checkout",
        alice.post("/api/orders", checkout, format="json"),
        201,
        answer_example("/api/orders", "post", "201"),
    )
    paid = request_example("/api/orders/{order_id}/pay", "post")
    check("pay", alice.post(f"/api/orders/{order.get('id')}/pay", paid, format="json"), 200)

    bob = client(log_in("bob"))
    option = answer_example("/api/orders/coupon-options", "post", "200")["results"][0]
    bobs = answer_examples("/api/coupons/{template_id}/claim", "post", "201")[1]
    check("bob's claim", bob.post(f"/api/coupons/{option['template_id']}/claim"), 201, bobs)
    options = check(
        "coupon options",
        bob.post(
            "/api/orders/coupon-options",
            request_example("/api/orders/coupon-options", "post"),
            format="json",
        ),
        200,
    )
    mine = next(
        (o for o in options.get("results", []) if o["coupon_id"] == option["coupon_id"]), None
    )
    problems.extend(f"coupon options{d}" for d in differences(mine, option))
    admin = client(log_in("admin"))
    template = answer_example("/api/admin/coupons/{template_id}", "get", "200")
    check("admin template", admin.get(f"/api/admin/coupons/{template['id']}"), 200, template)
    granted = answer_example("/api/admin/coupons/{template_id}/grants", "post", "200")
    grant = request_example("/api/admin/coupons/{template_id}/grants", "post")
    sorry = 8  # the demo's granted template, which bob holds one of
    check(
        "grant",
        admin.post(f"/api/admin/coupons/{sorry}/grants", grant, format="json"),
        200,
        granted,
    )
    campaign = answer_example("/api/admin/campaigns/{campaign_id}", "get", "200")
    check("campaign", admin.get(f"/api/admin/campaigns/{campaign['id']}"), 200, campaign)
    refund_path = "/api/admin/orders/{order_id}/refund"
    refund = request_example(refund_path, "post", "OneUnitOfOneLine")
    refunded = answer_example(refund_path, "post", "201")
    body = check(
        "refund",
        admin.post(f"/api/admin/orders/{order.get('id')}/refund", refund, format="json"),
        201,
    )
    problems.extend(f"refund{d}" for d in differences(body.get("refund"), refunded["refund"]))

    check(
        "redeem",
        alice.post(
            "/api/coupons/redeem", request_example("/api/coupons/redeem", "post"), format="json"
        ),
        201,
    )

    print(json.dumps(problems, ensure_ascii=False, indent=1), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
