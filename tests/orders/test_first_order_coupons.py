"""A new-customers coupon is for the first paid order only (SPEC section 20): checked at claim,
code and grant (tests/coupons/test_new_customers.py) and, here, at redeem: checkout refuses it
once the user has paid for an order, and a second order holding one is not paid for."""

import pytest

from coupons.errors import CouponNotEligible
from coupons.models import UserCoupon
from orders.models import Order, Product
from orders.services import order_checkout, order_pay
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    PaidOrderFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)


def checkout(user, coupon, product):
    return order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}], coupon_id=coupon.pk
    )


def pay(order):
    return order_pay(user_id=order.user_id, order_id=order.pk, amount=order.pay_amount)


def attempt(order):
    """A payment to run beside others: the order's new status, or the refusal's code."""

    def run():
        try:
            return pay(order).status
        except CouponNotEligible as error:
            return error.code

    return run


@pytest.mark.django_db
def test_checkout_refuses_a_new_customers_coupon_once_the_user_has_paid():
    user = UserFactory()
    coupon = UserCouponFactory(user=user, template=CouponTemplateFactory(audience="new_customers"))
    everyone = UserCouponFactory(user=user)
    product = ProductFactory(price=5000, stock=5)
    PaidOrderFactory(user=user)
    body = {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": coupon.pk}

    refused = bearer_client(user).post("/api/orders", body, format="json")
    allowed = bearer_client(user).post(
        "/api/orders", body | {"coupon_id": everyone.pk}, format="json"
    )

    assert refused.status_code == 409, refused.json()
    assert refused.json()["code"] == "not_eligible"
    assert allowed.status_code == 201
    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.UNUSED  # nothing half-written
    assert Product.objects.get(pk=product.pk).stock == 4  # only the allowed order took stock


@pytest.mark.django_db
def test_a_second_order_holding_a_new_customers_coupon_is_not_paid_for():
    user = UserFactory()
    template = CouponTemplateFactory(audience="new_customers", per_user_limit=2)
    first, second = (UserCouponFactory(user=user, template=template) for _ in range(2))
    product = ProductFactory(price=5000, stock=5)
    one, two = checkout(user, first, product), checkout(user, second, product)

    pay(one)
    refused = bearer_client(user).post(
        f"/api/orders/{two.pk}/pay", {"amount": two.pay_amount}, format="json"
    )

    assert refused.status_code == 409, refused.json()
    assert refused.json()["code"] == "not_eligible"
    two.refresh_from_db()
    assert two.status == Order.Status.PENDING_PAYMENT  # left to cancel or expire: coupon back


@pytest.mark.django_db(transaction=True)
def test_two_payments_racing_with_new_customers_coupons_pay_for_one_order():
    user = UserFactory()
    template = CouponTemplateFactory(audience="new_customers", per_user_limit=2)
    coupons = [UserCouponFactory(user=user, template=template) for _ in range(2)]
    product = ProductFactory(price=5000, stock=5)
    orders = [checkout(user, coupon, product) for coupon in coupons]

    outcomes = run_together([attempt(order) for order in orders])

    assert sorted(outcomes) == ["not_eligible", "paid"]
    assert Order.objects.filter(user=user, status="paid").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_plain_payment_racing_a_new_customers_coupon_never_lets_the_coupon_pay_second():
    # given: users each holding a plain order and one with a new-customers coupon
    product = ProductFactory(price=5000, stock=100)
    pairs = []
    for _ in range(40):
        user = UserFactory()
        coupon = UserCouponFactory(
            user=user, template=CouponTemplateFactory(audience="new_customers")
        )
        plain = order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}])
        pairs.append((checkout(user, coupon, product), plain))

    # when: each user's two payments race
    for with_coupon, plain in pairs:
        run_together([attempt(with_coupon), attempt(plain)])

    # then: the coupon paid only for its user's first paid order
    for with_coupon, plain in pairs:
        with_coupon.refresh_from_db()
        plain.refresh_from_db()
        assert plain.status == Order.Status.PAID
        if with_coupon.status == Order.Status.PAID:
            assert with_coupon.paid_at < plain.paid_at


@pytest.mark.django_db
def test_coupon_options_show_a_payer_a_new_customers_coupon_as_not_eligible():
    user = UserFactory()
    new_only = UserCouponFactory(
        user=user, template=CouponTemplateFactory(audience="new_customers")
    )
    everyone = UserCouponFactory(user=user)
    client = bearer_client(user)

    def reasons():
        results = client.get("/api/orders/coupon-options?amount=15000").json()["results"]
        return {option["coupon_id"]: (option["usable"], option["reason"]) for option in results}

    before = reasons()
    PaidOrderFactory(user=user)
    after = reasons()

    assert before == {new_only.pk: (True, None), everyone.pk: (True, None)}
    assert after == {new_only.pk: (False, "not_eligible"), everyone.pk: (True, None)}
