"""Many checkouts racing for one coupon: exactly one wins, the rest leave nothing behind."""

import pytest

from coupons.models import UserCoupon
from orders.models import Order, OrderItem, Product
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)

CHECKOUTS = 20


@pytest.mark.django_db(transaction=True)
def test_twenty_checkouts_with_one_coupon_make_exactly_one_order(frozen_now):
    # given: one shopper, one coupon, two products with plenty of stock
    user = UserFactory()
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=500))
    shirt = ProductFactory(price=9900, stock=100)
    socks = ProductFactory(price=1000, stock=100)
    body = {
        # Listed in opposite orders by different requests: the service locks by product id.
        "items": [{"product_id": shirt.pk, "quantity": 3}, {"product_id": socks.pk, "quantity": 2}],
        "coupon_id": coupon.pk,
    }

    def checkout(index: int) -> tuple[int, str | None]:
        items = body["items"] if index % 2 else body["items"][::-1]
        response = bearer_client(user).post("/api/orders", {**body, "items": items}, format="json")
        return response.status_code, response.json().get("code")

    # when
    responses = run_together([lambda n=n: checkout(n) for n in range(CHECKOUTS)])

    # then
    assert sorted(responses, key=lambda r: r[0]) == [(201, None)] + [(409, "coupon_used")] * 19
    order = Order.objects.get()
    assert (order.total_amount, order.discount_amount, order.pay_amount, order.coupon_id) == (
        31700,
        500,
        31200,
        coupon.pk,
    )
    assert OrderItem.objects.count() == 2
    assert list(UserCoupon.objects.values_list("status", flat=True)) == ["used"]
    assert dict(Product.objects.values_list("pk", "stock")) == {shirt.pk: 97, socks.pk: 98}


@pytest.mark.django_db(transaction=True)
def test_concurrent_checkouts_never_oversell(frozen_now):
    product = ProductFactory(price=100, stock=7)
    users = [UserFactory() for _ in range(CHECKOUTS)]

    def checkout(user) -> int:
        response = bearer_client(user).post(
            "/api/orders", {"items": [{"product_id": product.pk, "quantity": 1}]}, format="json"
        )
        return response.status_code

    codes = run_together([lambda user=user: checkout(user) for user in users])

    assert sorted(codes) == [201] * 7 + [409] * 13
    assert Order.objects.count() == 7
    assert Product.objects.get().stock == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_cancels_and_payments_of_one_order_have_one_winner(frozen_now):
    from orders import services

    for round_number in range(4):
        user = UserFactory()
        coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=500))
        product = ProductFactory(price=1000, stock=10)
        order = services.order_checkout(
            user_id=user.pk,
            items=[{"product_id": product.pk, "quantity": 2}],
            coupon_id=coupon.pk,
        )
        client = bearer_client(user)

        def cancel(order=order, client=client) -> str:
            return str(client.post(f"/api/orders/{order.pk}/cancel").status_code)

        def pay(order=order, client=client) -> str:
            response = client.post(f"/api/orders/{order.pk}/pay", {"amount": 1500}, format="json")
            return f"pay {response.status_code}"

        # Half the rounds race cancels only; the others mix in payments.
        actions = [cancel] * 6 if round_number % 2 == 0 else [cancel, pay] * 3

        outcomes = run_together(actions)

        winners = [outcome for outcome in outcomes if outcome in {"200", "pay 200"}]
        assert len(winners) == 1
        assert set(outcomes) - set(winners) <= {"409", "pay 409"}
        assert len(outcomes) == len(actions)
        order.refresh_from_db()
        coupon.refresh_from_db()
        product.refresh_from_db()
        if winners == ["200"]:
            assert (order.status, coupon.status, product.stock) == ("cancelled", "unused", 10)
        else:
            assert (order.status, coupon.status, product.stock) == ("paid", "used", 8)
