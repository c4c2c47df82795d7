"""Order reads, auth, the coupon advisor and the schema."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from orders import services
from tests.support.clients import bearer_client
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/orders"),
        ("post", "/api/orders"),
        ("get", "/api/orders/1"),
        ("post", "/api/orders/1/cancel"),
        ("post", "/api/orders/1/pay"),
        ("get", "/api/orders/coupon-options?amount=1"),
    ],
)
def test_every_order_route_needs_a_token(method, url):
    response = getattr(APIClient(), method)(url)
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_list_shows_only_my_orders_newest_first_paginated(user, shopper_client, now):
    product = ProductFactory(price=100, stock=100)
    mine = [
        services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": n}])
        for n in (1, 2, 3)
    ]
    services.order_checkout(
        user_id=UserFactory().pk, items=[{"product_id": product.pk, "quantity": 1}]
    )

    response = shopper_client.get("/api/orders?page_size=2")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [order["id"] for order in body["results"]] == [mine[2].pk, mine[1].pk]
    assert body["results"][0]["items"][0]["quantity"] == 3
    assert body["next"].endswith("page=2&page_size=2")
    second = shopper_client.get("/api/orders?page_size=2&page=2").json()
    assert [order["id"] for order in second["results"]] == [mine[0].pk]


def test_list_queries_do_not_grow_with_the_page(
    user, shopper_client, now, django_assert_max_num_queries
):
    product = ProductFactory(price=100, stock=100)
    for _ in range(5):
        services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}])

    # auth user, count, page, items
    with django_assert_max_num_queries(4):
        assert len(shopper_client.get("/api/orders").json()["results"]) == 5


def test_empty_list(shopper_client):
    assert shopper_client.get("/api/orders").json() == {
        "count": 0,
        "next": None,
        "previous": None,
        "results": [],
    }


def test_detail_of_my_order(user, shopper_client, now):
    product = ProductFactory(price=100)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    response = shopper_client.get(f"/api/orders/{order.pk}")
    assert response.status_code == 200
    assert response.json()["id"] == order.pk


def test_coupon_options_ranks_and_explains(user, shopper_client, now):
    # given: the shopper's coupons against an order of 15000
    def coupon(**terms):
        return UserCouponFactory(user=user, template=CouponTemplateFactory(**terms))

    small = coupon(value=500)
    big_threshold = coupon(type="threshold", value=3000, min_amount=10000)
    near_miss = coupon(type="threshold", value=5000, min_amount=20000)
    far_miss = coupon(type="threshold", value=9000, min_amount=50000)
    bigger_than_total = coupon(value=20000)
    later = coupon(valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2))
    UserCouponFactory(user=user, status="used", used_at=now)  # not offered
    coupon(valid_from=now - timedelta(days=2), valid_until=now - timedelta(days=1))  # expired
    UserCouponFactory(template=CouponTemplateFactory(value=9999))  # someone else's

    response = shopper_client.get("/api/orders/coupon-options?amount=15000")

    assert response.status_code == 200
    body = response.json()
    assert (body["count"], body["next"], body["previous"]) == (6, None, None)
    assert [
        (o["coupon_id"], o["usable"], o["discount"], o["reason"], o["shortfall"])
        for o in body["results"]
    ] == [
        (bigger_than_total.pk, True, 15000, None, None),
        (big_threshold.pk, True, 3000, None, None),
        (small.pk, True, 500, None, None),
        (later.pk, False, 0, "not_started", None),
        (near_miss.pk, False, 0, "threshold_not_met", 5000),
        (far_miss.pk, False, 0, "threshold_not_met", 35000),
    ]
    first = body["results"][0]
    assert set(first) == {
        "coupon_id",
        "template_id",
        "name",
        "type",
        "value",
        "min_amount",
        "max_discount",
        "scope",
        "scope_ids",
        "excluded_product_ids",
        "excluded_category_ids",
        "one_unit_only",
        "valid_from",
        "valid_until",
        "usable",
        "discount",
        "reason",
        "shortfall",
        "eligible_subtotal",
    }


def test_coupon_options_at_the_threshold_exactly(user, shopper_client, now):
    coupon = UserCouponFactory(
        user=user, template=CouponTemplateFactory(type="threshold", value=5000, min_amount=20000)
    )
    result = shopper_client.get("/api/orders/coupon-options?amount=20000").json()["results"]
    assert result == [
        {
            "coupon_id": coupon.pk,
            "template_id": coupon.template_id,
            "name": coupon.template.name,
            "type": "threshold",
            "value": 5000,
            "min_amount": 20000,
            "max_discount": None,
            "scope": "all",
            "scope_ids": [],
            "excluded_product_ids": [],
            "excluded_category_ids": [],
            "one_unit_only": False,
            "valid_from": (now - timedelta(days=1)).isoformat().replace("+00:00", "Z"),
            "valid_until": (now + timedelta(days=1)).isoformat().replace("+00:00", "Z"),
            "usable": True,
            "discount": 5000,
            "reason": None,
            "shortfall": None,
            "eligible_subtotal": None,
        }
    ]


@pytest.mark.parametrize(
    "query", ["", "?amount=", "?amount=-1", "?amount=abc", "?amount=1.5", f"?amount={2**63}"]
)
def test_coupon_options_needs_a_good_amount(shopper_client, query):
    response = shopper_client.get(f"/api/orders/coupon-options{query}")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "amount" in response.json()["fields"]


def test_coupon_options_refuses_unknown_parameters(shopper_client):
    response = shopper_client.get("/api/orders/coupon-options?amount=1&sort=x")
    assert response.status_code == 400
    assert "sort" in response.json()["fields"]


def test_schema_documents_the_order_routes(client):
    response = client.get("/api/schema/?format=json")

    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {
        "/api/orders",
        "/api/orders/{order_id}",
        "/api/orders/{order_id}/cancel",
        "/api/orders/{order_id}/pay",
        "/api/orders/coupon-options",
    } <= set(paths)
    assert "requestBody" in paths["/api/orders"]["post"]
    assert "requestBody" in paths["/api/orders/{order_id}/pay"]["post"]
    assert "requestBody" not in paths["/api/orders/{order_id}/cancel"]["post"]
    assert paths["/api/orders/coupon-options"]["get"]["parameters"][0]["name"] == "amount"


def test_malformed_json_checkout_is_400(shopper_client):
    response = shopper_client.post("/api/orders", '{"items": [', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_another_users_token_cannot_see_my_order(user, now):
    product = ProductFactory(price=100)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    stranger = bearer_client(UserFactory())
    assert stranger.get(f"/api/orders/{order.pk}").status_code == 404
    assert stranger.get("/api/orders").json()["count"] == 0


def test_coupon_options_are_paginated_after_ranking(user, shopper_client):
    for value in (100, 300, 200):
        UserCouponFactory(user=user, template=CouponTemplateFactory(value=value))

    first = shopper_client.get("/api/orders/coupon-options?amount=1000&page_size=2").json()
    second = shopper_client.get("/api/orders/coupon-options?amount=1000&page_size=2&page=2").json()

    assert first["count"] == 3
    assert [o["discount"] for o in first["results"]] == [300, 200]
    assert [o["discount"] for o in second["results"]] == [100]


def test_coupon_options_carry_the_coupons_name_for_an_amount_and_a_cart(user, shopper_client):
    """GET (a bare amount) and POST (a cart) name each coupon as the shopper saw it claimed."""
    coupon = UserCouponFactory(
        user=user, template=CouponTemplateFactory(name="Spring tea week", value=300)
    )
    product = ProductFactory(price=5000)

    by_amount = shopper_client.get("/api/orders/coupon-options?amount=5000").json()
    by_cart = shopper_client.post(
        "/api/orders/coupon-options",
        {"items": [{"product_id": product.pk, "quantity": 1}]},
        format="json",
    ).json()

    assert [(o["coupon_id"], o["name"]) for o in by_amount["results"]] == [
        (coupon.pk, "Spring tea week")
    ]
    assert [(o["coupon_id"], o["name"]) for o in by_cart["results"]] == [
        (coupon.pk, "Spring tea week")
    ]
