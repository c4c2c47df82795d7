"""New customers only (SPEC section 18): a template with audience `new_customers` is issued
only to users with no paid order, decided inside the issuing decision through the injected
customer history (coupons does not import orders), in the order window, paused, audience,
total, per-user limit."""

import threading
from datetime import timedelta

import pytest

from core import clock
from coupons.errors import ClaimNotEligible, ClaimSoldOut
from coupons.issuing import service as issuing
from coupons.models import UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes
from orders.customers import OrdersCustomerHistory
from orders.models import Order
from orders.services import order_pay
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, PaidOrderFactory, UserFactory
from tests.support.helpers import claim_url


def pending_order(user, amount=1000) -> Order:
    return Order.objects.create(
        user=user,
        total_amount=amount,
        pay_amount=amount,
        expire_at=clock.now() + timedelta(minutes=15),
    )


@pytest.mark.django_db
def test_only_users_without_a_paid_order_may_claim(user, shopper_client):
    template = CouponTemplateFactory(audience="new_customers", per_user_limit=2)
    pending_order(user)  # unpaid orders do not count
    cancelled = pending_order(user)
    Order.objects.filter(pk=cancelled.pk).update(status="cancelled", cancelled_at=clock.now())
    payer = UserFactory()
    PaidOrderFactory(user=payer)

    new = shopper_client.post(claim_url(template))
    old = bearer_client(payer).post(claim_url(template))

    assert new.status_code == 201, new.json()
    assert old.status_code == 409
    assert old.json()["code"] == "not_eligible"
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [user.pk]
    template.refresh_from_db()
    assert template.claimed_count == 1


@pytest.mark.django_db
def test_the_audience_is_checked_after_the_pause_and_before_the_total(user):
    payer = UserFactory()
    PaidOrderFactory(user=payer)
    sold_out = CouponTemplateFactory(audience="new_customers", total=1)
    issuing.coupon_claim(template_id=sold_out.pk, user_id=user.pk)

    with pytest.raises(ClaimNotEligible):
        issuing.coupon_claim(template_id=sold_out.pk, user_id=payer.pk)
    with pytest.raises(ClaimSoldOut):
        issuing.coupon_claim(template_id=sold_out.pk, user_id=UserFactory().pk)


@pytest.mark.django_db
def test_codes_and_grants_refuse_users_who_have_paid(user, staff_client):
    shared = CouponTemplateFactory(audience="new_customers", code="NEWBIE-1")
    with_codes = CouponTemplateFactory(audience="new_customers", visibility="hidden")
    codes.single_use_codes_create(template_id=with_codes.pk, count=1)
    single_use = SingleUseCode.objects.get()
    payer = UserFactory()
    PaidOrderFactory(user=payer)
    client = bearer_client(payer)

    by_code = client.post("/api/coupons/redeem", {"code": "newbie-1"}, format="json")
    by_single_use = client.post("/api/coupons/redeem", {"code": single_use.code}, format="json")
    grant = staff_client.post(
        f"/api/admin/coupons/{shared.pk}/grants",
        {"user_ids": [payer.pk, user.pk], "reason": "welcome"},
        format="json",
    )

    assert [by_code.json()["code"], by_single_use.json()["code"]] == ["not_eligible"] * 2
    assert by_code.status_code == by_single_use.status_code == 409
    single_use.refresh_from_db()
    assert single_use.used_at is None  # still there for a new customer
    assert grant.status_code == 200
    assert (grant.json()["granted"], grant.json()["not_eligible"]) == ([user.pk], [payer.pk])
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [user.pk]


@pytest.mark.django_db
def test_the_shopper_list_shows_not_eligible_to_users_who_have_paid(user, shopper_client):
    template = CouponTemplateFactory(audience="new_customers")
    everyone = CouponTemplateFactory()
    payer = UserFactory()
    PaidOrderFactory(user=payer)

    def states(client):
        return {item["id"]: item["state"] for item in client.get("/api/coupons").json()["results"]}

    assert states(shopper_client) == {template.pk: "claimable", everyone.pk: "claimable"}
    assert states(bearer_client(payer)) == {template.pk: "not_eligible", everyone.pk: "claimable"}
    listed = shopper_client.get("/api/coupons").json()["results"]
    assert {item["id"]: item["audience"] for item in listed} == {
        template.pk: "new_customers",
        everyone.pk: "all",
    }


@pytest.mark.django_db
def test_audience_is_published_and_validated_by_the_admin_api(staff_client):
    body = {
        "name": "新人券",
        "type": "direct",
        "value": 500,
        "total": 10,
        "valid_from": "2026-12-01T00:00:00+08:00",
        "valid_until": "2026-12-31T00:00:00+08:00",
    }
    created = staff_client.post(
        "/api/admin/coupons", {**body, "audience": "new_customers"}, format="json"
    )
    refused = staff_client.post("/api/admin/coupons", {**body, "audience": "vip"}, format="json")

    assert created.status_code == 201, created.json()
    assert created.json()["audience"] == "new_customers"
    assert refused.status_code == 400
    assert list(refused.json()["fields"]) == ["audience"]


@pytest.mark.django_db(transaction=True)
def test_a_claim_whose_decision_read_came_before_the_first_payment_stands(monkeypatch):
    """The answer to a claim racing the first payment: the claim is judged by what its decision
    transaction reads. Here the payment commits after that read and before the claim commits:
    the claim stands (the user was new when it was decided), and the payment is not held up."""
    template = CouponTemplateFactory(audience="new_customers", per_user_limit=2)
    user = UserFactory()
    order = pending_order(user)
    decision_read, paid = threading.Event(), threading.Event()
    real_lookup = OrdersCustomerHistory.has_paid_order
    calls = []

    def lookup_then_wait(self, *, user_id, using="default"):
        answer = real_lookup(self, user_id=user_id, using=using)
        calls.append(answer)
        if len(calls) == 2:  # the second read is the decision's, inside its transaction
            decision_read.set()
            assert paid.wait(timeout=30)
        return answer

    monkeypatch.setattr(OrdersCustomerHistory, "has_paid_order", lookup_then_wait)

    def claim():
        return issuing.coupon_claim(template_id=template.pk, user_id=user.pk)

    def pay():
        assert decision_read.wait(timeout=30)
        paid_order = order_pay(user_id=user.pk, order_id=order.pk, amount=order.pay_amount)
        paid.set()
        return paid_order

    coupon, paid_order = run_together([claim, pay])

    assert calls == [False, False]
    assert paid_order.status == "paid"
    assert UserCoupon.objects.filter(pk=coupon.pk, user=user).exists()
    # From now on the user has paid: the next claim is refused.
    monkeypatch.setattr(OrdersCustomerHistory, "has_paid_order", real_lookup)
    with pytest.raises(ClaimNotEligible):
        issuing.coupon_claim(template_id=template.pk, user_id=user.pk)
    assert UserCoupon.objects.filter(user=user).count() == 1


@pytest.mark.django_db(transaction=True)
def test_claims_racing_first_payments_are_each_judged_by_one_consistent_read():
    """Twenty users each pay their first order while claiming a new-customers coupon, all at
    once. Every payment succeeds; every claim is a coupon or `not_eligible`, never an error,
    never half-written; and a claim started after its user's payment returned is refused."""
    template = CouponTemplateFactory(audience="new_customers", total=1000, per_user_limit=2)
    users = [UserFactory() for _ in range(20)]
    orders = {user.pk: pending_order(user) for user in users}

    def claim(user):
        response = bearer_client(user).post(claim_url(template))
        return response.status_code, response.json().get("code")

    def pay(user):
        order = orders[user.pk]
        return order_pay(user_id=user.pk, order_id=order.pk, amount=order.pay_amount).status

    actions = []
    for user in users:
        actions += [lambda user=user: claim(user), lambda user=user: pay(user)]
    results = run_together(actions)

    claims, payments = results[0::2], results[1::2]
    assert payments == ["paid"] * len(users)
    assert {outcome for outcome in claims} <= {(201, None), (409, "not_eligible")}
    won = [user.pk for user, outcome in zip(users, claims, strict=True) if outcome[0] == 201]
    assert sorted(UserCoupon.objects.values_list("user_id", flat=True)) == sorted(won)
    template.refresh_from_db()
    assert template.claimed_count == len(won)
    # After the payments returned, every user has paid: no claim passes any more.
    after = run_together([lambda user=user: claim(user) for user in users])
    assert after == [(409, "not_eligible")] * len(users)
    assert UserCoupon.objects.count() == len(won)


@pytest.mark.django_db
def test_the_django_admin_publishes_and_keeps_the_audience(admin_site):
    from coupons.models import CouponTemplate
    from tests.support.admin_forms import form_data

    response = admin_site.post(
        "/admin/coupons/coupontemplate/add/", form_data(audience="new_customers")
    )
    assert response.status_code == 302
    template = CouponTemplate.objects.get()
    assert template.audience == "new_customers"

    # An edit posted without the field (an older form) keeps the audience.
    edit = form_data(name="Renamed")
    del edit["audience"]
    response = admin_site.post(f"/admin/coupons/coupontemplate/{template.pk}/change/", edit)
    assert response.status_code == 302
    template.refresh_from_db()
    assert (template.name, template.audience) == ("Renamed", "new_customers")
