"""Campaigns with a money budget (SPEC section 27): the discount of a coupon used at checkout
is taken from its campaign's budget in the checkout's transaction and given back when the
order is cancelled, expires unpaid or is refunded whole; a checkout the budget cannot cover
is 409 `budget_exhausted`, exact under concurrency; once the budget is spent, its templates
issue nothing; the advisor says which coupons the budget cannot cover."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry

from accounts.staff_actions import StaffAction, recorded_action
from core import clock
from coupons.campaigns.models import Campaign
from coupons.campaigns.services import campaign_create, campaign_edit
from coupons.errors import BudgetExhausted, ClaimBudgetExhausted, TemplateInvalid
from coupons.models import UserCoupon
from coupons.services import grants
from orders import services
from orders.models import Order
from orders.refunds import order_refund
from orders.selectors import coupon_options
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.helpers import claim_url


def a_campaign(budget: int | None, *templates) -> Campaign:
    now = clock.now()
    return campaign_create(
        name="双十一",
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=10),
        budget=budget,
        template_ids=[template.pk for template in templates],
    )


def spent(campaign: Campaign) -> int:
    return Campaign.objects.values_list("spent", flat=True).get(pk=campaign.pk)


def checkout(user, coupon, product, quantity=1) -> Order:
    return services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": product.pk, "quantity": quantity}],
        coupon_id=coupon.pk,
    )


@pytest.mark.django_db
def test_a_checkout_takes_its_discount_and_a_cancel_gives_it_back():
    template = CouponTemplateFactory(value=500)
    campaign = a_campaign(1_000, template)
    user = UserFactory()
    coupon = UserCouponFactory(user=user, template=template)

    order = checkout(user, coupon, ProductFactory(price=3000, stock=5))
    assert spent(campaign) == 500
    services.order_cancel(user_id=user.pk, order_id=order.pk)

    assert spent(campaign) == 0
    assert UserCoupon.objects.get(pk=coupon.pk).charged_amount == 0


@pytest.mark.django_db
def test_a_checkout_the_budget_cannot_cover_is_refused_and_leaves_nothing():
    template = CouponTemplateFactory(value=500)
    campaign = a_campaign(400, template)
    user = UserFactory()
    coupon = UserCouponFactory(user=user, template=template)
    product = ProductFactory(price=3000, stock=5)

    answer = bearer_client(user).post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": coupon.pk},
        format="json",
    )

    assert answer.status_code == 409
    assert answer.json()["code"] == "budget_exhausted"
    assert spent(campaign) == 0
    assert not Order.objects.exists()
    assert UserCoupon.objects.get(pk=coupon.pk).status == UserCoupon.Status.UNUSED
    product.refresh_from_db()
    assert product.stock == 5


@pytest.mark.django_db
def test_expiry_and_a_whole_refund_give_back_a_partial_refund_keeps():
    template = CouponTemplateFactory(value=500, total=10, per_user_limit=5)
    campaign = a_campaign(10_000, template)
    user = UserFactory()
    product = ProductFactory(price=3000, stock=50)
    expiring, refunded, partial = (
        checkout(user, UserCouponFactory(user=user, template=template), product, quantity=2)
        for _ in range(3)
    )
    assert spent(campaign) == 1_500
    for order in (refunded, partial):
        services.order_pay(user_id=user.pk, order_id=order.pk, amount=order.pay_amount)

    Order.objects.filter(pk=expiring.pk).update(expire_at=clock.now() - timedelta(seconds=1))
    services.orders_expire_overdue()
    assert spent(campaign) == 1_000
    order_refund(order_id=refunded.pk, reason="退货")
    assert spent(campaign) == 500
    line = partial.items.get()
    order_refund(order_id=partial.pk, reason="少发一件", lines={line.pk: 1})

    assert spent(campaign) == 500  # the partly refunded order still used its coupon


@pytest.mark.django_db(transaction=True)
def test_fifty_checkouts_racing_the_last_yuan_never_overspend():
    template = CouponTemplateFactory(value=300, total=100)
    campaign = a_campaign(3_000 + 200, template)  # room for ten discounts, not eleven
    product = ProductFactory(price=1000, stock=100)
    buyers = [
        (user, UserCouponFactory(user=user, template=template))
        for user in (UserFactory() for _ in range(50))
    ]

    def buy(user, coupon) -> str:
        try:
            checkout(user, coupon, product)
        except BudgetExhausted:
            return "budget_exhausted"
        return "ordered"

    outcomes = run_together([lambda u=u, c=c: buy(u, c) for u, c in buyers])

    assert sorted(outcomes) == ["budget_exhausted"] * 40 + ["ordered"] * 10
    assert spent(campaign) == 3_000
    assert Order.objects.count() == 10
    assert UserCoupon.objects.filter(status=UserCoupon.Status.USED).count() == 10


@pytest.mark.django_db
def test_once_the_budget_is_spent_claims_and_grants_are_refused():
    template = CouponTemplateFactory(value=500, total=10, per_user_limit=5)
    campaign = a_campaign(500, template)
    user = UserFactory()
    checkout(user, UserCouponFactory(user=user, template=template), ProductFactory(price=3000))
    assert spent(campaign) == 500

    claim = bearer_client(UserFactory()).post(claim_url(template))

    assert claim.status_code == 409
    assert claim.json()["code"] == "budget_exhausted"
    with pytest.raises(ClaimBudgetExhausted):
        grants.coupon_grant(template_id=template.pk, user_ids=[user.pk], reason="补偿", granted_by_id=None)


@pytest.mark.django_db
def test_terms_cached_before_the_template_joined_a_campaign_refuse_once_it_is_spent():
    template = CouponTemplateFactory(value=500, total=10, per_user_limit=5)
    first = UserFactory()
    assert bearer_client(first).post(claim_url(template)).status_code == 201  # terms cached
    assert bearer_client(first).post(claim_url(template)).status_code == 201  # from Redis
    campaign = a_campaign(500, template)
    coupon = UserCoupon.objects.filter(user=first).first()
    checkout(first, coupon, ProductFactory(price=3000))
    assert spent(campaign) == 500

    claim = bearer_client(UserFactory()).post(claim_url(template))

    assert claim.status_code == 409
    assert claim.json()["code"] == "budget_exhausted"


@pytest.mark.django_db
def test_the_advisor_shows_a_coupon_the_budget_cannot_cover_as_unusable():
    covered, short = CouponTemplateFactory(value=300), CouponTemplateFactory(value=800)
    a_campaign(500, covered, short)
    user = UserFactory()
    UserCouponFactory(user=user, template=covered)
    UserCouponFactory(user=user, template=short)

    options = coupon_options(user_id=user.pk, amount=5_000)

    assert [(o.coupon.template_id, o.usable, o.reason) for o in options] == [
        (covered.pk, True, None),
        (short.pk, False, "budget_exhausted"),
    ]


@pytest.mark.django_db
def test_campaign_rules_name_the_field_and_each_change_is_recorded(staff):
    now = clock.now()
    mine, theirs = CouponTemplateFactory(), CouponTemplateFactory()
    a_campaign(None, theirs)

    with pytest.raises(TemplateInvalid) as backwards:
        campaign_create(name="x", starts_at=now, ends_at=now - timedelta(hours=1), actor=staff)
    with pytest.raises(TemplateInvalid) as taken:
        campaign_create(
            name="x", starts_at=now, ends_at=now + timedelta(days=1), template_ids=[theirs.pk]
        )
    campaign = campaign_create(
        name=" 618 ",
        starts_at=now,
        ends_at=now + timedelta(days=1),
        budget=900,
        template_ids=[mine.pk],
        actor=staff,
    )
    edited = campaign_edit(
        campaign_id=campaign.pk, changes={"budget": 1_200}, template_ids=[], actor=staff
    )

    assert set(backwards.value.fields) == {"ends_at"}
    assert set(taken.value.fields) == {"template_ids"}
    assert (edited.name, edited.budget) == ("618", 1_200)
    mine.refresh_from_db()
    assert mine.campaign_id is None
    created, changed = (recorded_action(e) for e in LogEntry.objects.order_by("pk"))
    assert created[0] == StaffAction.CAMPAIGN_CREATE and created[1]["templates"] == [mine.pk]
    assert changed == (StaffAction.CAMPAIGN_EDIT, {"budget": [900, 1_200], "templates": []})


@pytest.mark.django_db
def test_a_budget_never_goes_below_what_is_spent():
    template = CouponTemplateFactory(value=500)
    campaign = a_campaign(1_000, template)
    user = UserFactory()
    checkout(user, UserCouponFactory(user=user, template=template), ProductFactory(price=3000))

    with pytest.raises(TemplateInvalid) as refused:
        campaign_edit(campaign_id=campaign.pk, changes={"budget": 400})

    assert set(refused.value.fields) == {"budget"}
