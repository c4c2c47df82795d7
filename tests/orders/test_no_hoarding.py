"""No hoarding (SPEC section 19): checkout is throttled per user, and one user holds at most
MAX_UNPAID_ORDERS orders awaiting payment, however many checkouts race."""

import pytest
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from orders import services
from orders.errors import TooManyUnpaidOrders
from orders.models import Order, Product
from tests.support.concurrency import run_together
from tests.support.factories import ProductFactory, UserFactory


def client_of(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(user)}")
    return client


def checkout(client: APIClient, product, quantity: int = 1):
    body = {"items": [{"product_id": product.pk, "quantity": quantity}]}
    return client.post("/api/orders", body, format="json")


@pytest.mark.django_db
def test_the_sixth_unpaid_order_is_409_and_takes_no_stock(settings):
    settings.MAX_UNPAID_ORDERS = 5
    user, product = UserFactory(), ProductFactory(price=100, stock=100)
    client = client_of(user)

    answers = [checkout(client, product) for _ in range(6)]

    assert [answer.status_code for answer in answers] == [201] * 5 + [409]
    assert answers[-1].json()["code"] == "too_many_unpaid_orders"
    assert Order.objects.filter(user=user).count() == 5
    assert Product.objects.get().stock == 95
    # Paying or cancelling one makes room for one more; another user is not affected.
    order_id = answers[0].json()["id"]
    assert client.post(f"/api/orders/{order_id}/cancel").status_code == 200
    assert checkout(client, product).status_code == 201
    assert checkout(client, product).status_code == 409
    assert checkout(client_of(UserFactory()), product).status_code == 201


@pytest.mark.django_db
def test_one_order_line_cannot_take_a_products_whole_stock(settings):
    """The per-line cap (ORDER_LINE_MAX_QUANTITY): before it, one unpaid order took 999."""
    settings.ORDER_LINE_MAX_QUANTITY = 10
    product = ProductFactory(price=100, stock=50)
    client = client_of(UserFactory())

    whole_stock = checkout(client, product, quantity=50)
    chinese = client.post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 11}]},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert whole_stock.status_code == 400
    assert whole_stock.json()["fields"] == {"items": ["Quantity must be 1 to 10 per line."]}
    assert chinese.json()["fields"] == {"items": ["每行数量必须在 1 到 10 之间。"]}
    assert checkout(client, product, quantity=10).status_code == 201
    assert Product.objects.get().stock == 40


@pytest.mark.django_db
def test_unpaid_orders_together_hold_at_most_the_line_cap_of_a_product(settings):
    # before: five unpaid orders of 10 units each held 50 units of a 30-unit product's stock
    settings.ORDER_LINE_MAX_QUANTITY = 10
    product, other = ProductFactory(price=100, stock=30), ProductFactory(price=100, stock=30)
    client = client_of(UserFactory())

    answers = [checkout(client, product, quantity=4) for _ in range(3)]

    assert [answer.status_code for answer in answers] == [201, 201, 409]
    assert answers[-1].json()["code"] == "too_many_unpaid_orders"
    assert "8 of product" in answers[-1].json()["detail"]
    assert checkout(client, product, quantity=2).status_code == 201  # up to the cap exactly
    assert checkout(client, other, quantity=10).status_code == 201  # per product
    assert Product.objects.get(pk=product.pk).stock == 20
    # a paid order no longer waits: its units free the room
    order = answers[0].json()
    paid = client.post(
        f"/api/orders/{order['id']}/pay", {"amount": order["pay_amount"]}, format="json"
    )
    assert paid.status_code == 200
    assert checkout(client, product, quantity=4).status_code == 201


@pytest.mark.django_db
def test_the_cap_is_answered_in_chinese_too(settings):
    settings.MAX_UNPAID_ORDERS = 0
    client = client_of(UserFactory())

    answer = client.post(
        "/api/orders",
        {"items": [{"product_id": ProductFactory().pk, "quantity": 1}]},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert answer.status_code == 409
    assert answer.json() == {
        "code": "too_many_unpaid_orders",
        "detail": "待支付的订单过多，请先支付或取消一笔订单。",
    }


@pytest.mark.django_db(transaction=True)
def test_concurrent_checkouts_of_one_user_never_pass_the_cap(settings):
    # given: twelve checkouts of one user released together against a cap of 5
    settings.MAX_UNPAID_ORDERS = 5
    user, product = UserFactory(), ProductFactory(price=100, stock=100)

    def one_checkout():
        try:
            return services.order_checkout(
                user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
            ).pk
        except TooManyUnpaidOrders:
            return None

    # when
    results = run_together([one_checkout] * 12)

    # then
    assert len([order_id for order_id in results if order_id is not None]) == 5
    assert Order.objects.filter(user=user).count() == 5
    assert Product.objects.get().stock == 95


@pytest.mark.django_db
def test_checkout_is_throttled_per_user_and_reading_orders_is_not(settings, frozen_now):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "checkout": "3/min"}
    settings.MAX_UNPAID_ORDERS = 100
    user, product = UserFactory(), ProductFactory(price=100, stock=100)
    client = client_of(user)

    answers = [checkout(client, product) for _ in range(4)]
    listing = [client.get("/api/orders").status_code for _ in range(5)]

    assert [answer.status_code for answer in answers] == [201, 201, 201, 429]
    assert answers[-1].json()["code"] == "throttled"
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert Order.objects.count() == 3
    assert listing == [200] * 5
    assert checkout(client_of(UserFactory()), product).status_code == 201
