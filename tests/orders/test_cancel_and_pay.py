"""Cancel (stock and coupon returned together or not at all) and pay."""

from datetime import timedelta

import pytest

from core.money import format_money
from coupons import ports
from coupons.errors import CouponRollbackFailed
from orders import services
from orders.models import Order, Product
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.snapshots import snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def order_with_coupon(user, now):
    """A pending order: 2 x 9900 with a 5000-off coupon, from stock 10 and 5."""
    shirt = ProductFactory(price=9900, stock=10)
    socks = ProductFactory(price=1000, stock=5)
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(value=5000))
    return services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": shirt.pk, "quantity": 2}, {"product_id": socks.pk, "quantity": 1}],
        coupon_id=coupon.pk,
    )


def stocks() -> list[int]:
    return list(Product.objects.order_by("pk").values_list("stock", flat=True))


def coupon_status(order: Order) -> str:
    order.coupon.refresh_from_db()
    return order.coupon.status


def test_cancel_returns_stock_and_coupon(shopper_client, order_with_coupon, now):
    assert stocks() == [8, 4]

    response = shopper_client.post(f"/api/orders/{order_with_coupon.pk}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["cancelled_at"] == now.isoformat().replace("+00:00", "Z")
    assert stocks() == [10, 5]
    order_with_coupon.coupon.refresh_from_db()
    assert (order_with_coupon.coupon.status, order_with_coupon.coupon.used_at) == ("unused", None)
    # The coupon is usable again.
    assert ports.get_usable(
        user_id=order_with_coupon.user_id, coupon_id=order_with_coupon.coupon_id
    )


@pytest.mark.parametrize("failing_step", ["rollback_coupon", "stock_return"])
def test_a_failure_between_cancel_steps_leaves_the_order_untouched(
    monkeypatch, order_with_coupon, failing_step
):
    def boom(*args, **kwargs):
        raise RuntimeError("forced failure")

    if failing_step == "rollback_coupon":
        monkeypatch.setattr(ports, "rollback_coupon", boom)
    else:
        monkeypatch.setattr(services, "stock_return", boom)
    before = snapshot()

    with pytest.raises(RuntimeError, match="forced failure"):
        services.order_cancel(user_id=order_with_coupon.user_id, order_id=order_with_coupon.pk)

    assert snapshot() == before
    order_with_coupon.refresh_from_db()
    assert order_with_coupon.status == "pending_payment"
    assert coupon_status(order_with_coupon) == "used"
    assert stocks() == [8, 4]


def test_a_coupon_that_cannot_be_rolled_back_aborts_the_cancel(order_with_coupon):
    # Someone put the coupon back by hand: the cancel must not half-happen.
    type(order_with_coupon.coupon).objects.filter(pk=order_with_coupon.coupon_id).update(
        status="unused", used_at=None
    )
    before = snapshot()

    with pytest.raises(CouponRollbackFailed):
        services.order_cancel(user_id=order_with_coupon.user_id, order_id=order_with_coupon.pk)

    assert snapshot() == before


def test_cancelling_twice_is_409_and_changes_nothing(shopper_client, order_with_coupon):
    assert shopper_client.post(f"/api/orders/{order_with_coupon.pk}/cancel").status_code == 200
    before = snapshot()

    response = shopper_client.post(f"/api/orders/{order_with_coupon.pk}/cancel")

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert snapshot() == before
    assert stocks() == [10, 5]


def test_pay_with_the_exact_amount(shopper_client, order_with_coupon, now):
    assert order_with_coupon.pay_amount == 2 * 9900 + 1000 - 5000

    response = shopper_client.post(
        f"/api/orders/{order_with_coupon.pk}/pay", {"amount": 15800}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "paid"
    assert response.json()["paid_at"] == now.isoformat().replace("+00:00", "Z")
    assert coupon_status(order_with_coupon) == "used"
    assert stocks() == [8, 4]


@pytest.mark.parametrize("amount", [15799, 15801, 0])
def test_pay_with_a_wrong_amount_is_409_amount_mismatch(shopper_client, order_with_coupon, amount):
    before = snapshot()

    response = shopper_client.post(
        f"/api/orders/{order_with_coupon.pk}/pay", {"amount": amount}, format="json"
    )

    assert response.status_code == 409
    assert response.json() == {
        "code": "amount_mismatch",
        "detail": f"This order asks for ¥158.00, not {format_money(amount)}.",  # as currency
    }
    assert snapshot() == before


def test_cancelling_a_paid_order_is_409_and_changes_nothing(shopper_client, order_with_coupon):
    services.order_pay(
        user_id=order_with_coupon.user_id, order_id=order_with_coupon.pk, amount=15800
    )
    before = snapshot()

    response = shopper_client.post(f"/api/orders/{order_with_coupon.pk}/cancel")

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert snapshot() == before


@pytest.mark.parametrize("first", ["cancel", "pay"])
def test_paying_a_cancelled_or_paid_order_is_409(shopper_client, order_with_coupon, first):
    if first == "cancel":
        services.order_cancel(user_id=order_with_coupon.user_id, order_id=order_with_coupon.pk)
    else:
        services.order_pay(
            user_id=order_with_coupon.user_id, order_id=order_with_coupon.pk, amount=15800
        )
    before = snapshot()

    response = shopper_client.post(
        f"/api/orders/{order_with_coupon.pk}/pay", {"amount": 15800}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert snapshot() == before


def test_paying_after_the_deadline_is_409(shopper_client, order_with_coupon, frozen_now):
    frozen_now(order_with_coupon.expire_at + timedelta(milliseconds=1))
    before = snapshot()

    response = shopper_client.post(
        f"/api/orders/{order_with_coupon.pk}/pay", {"amount": 15800}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert snapshot() == before


def test_paying_at_the_deadline_itself_is_accepted(shopper_client, order_with_coupon, frozen_now):
    frozen_now(order_with_coupon.expire_at)
    response = shopper_client.post(
        f"/api/orders/{order_with_coupon.pk}/pay", {"amount": 15800}, format="json"
    )
    assert response.status_code == 200


@pytest.mark.parametrize("action", ["cancel", "pay", "get"])
def test_someone_elses_order_is_404_and_unchanged(order_with_coupon, action):
    from tests.support.clients import bearer_client

    stranger = bearer_client(UserFactory())
    before = snapshot()
    url = f"/api/orders/{order_with_coupon.pk}"

    if action == "get":
        response = stranger.get(url)
    else:
        response = stranger.post(f"{url}/{action}", {"amount": 15800}, format="json")

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Order not found."}
    assert snapshot() == before


@pytest.mark.parametrize(
    "body", [{}, {"amount": -1}, {"amount": "1.5"}, {"amount": 2**63}, {"amount": 1, "x": 1}]
)
def test_bad_pay_input_is_400(shopper_client, order_with_coupon, body):
    response = shopper_client.post(f"/api/orders/{order_with_coupon.pk}/pay", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_unknown_order_ids_are_404(shopper_client):
    assert shopper_client.get("/api/orders/999999").status_code == 404
    assert shopper_client.post("/api/orders/999999/cancel").status_code == 404
    assert shopper_client.get(f"/api/orders/{'9' * 19}").status_code == 404  # beyond BIGINT
    assert shopper_client.get("/api/orders/-1").status_code == 404
