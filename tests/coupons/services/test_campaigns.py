"""Campaigns with a money budget (SPEC section 27): the discount of a coupon used at checkout
is taken from its campaign's budget in the checkout's transaction and given back when the
order is cancelled, expires unpaid or is refunded whole; a checkout the budget cannot cover
is 409 `budget_exhausted`, exact under concurrency; once the budget is spent, its templates
issue nothing; the advisor says which coupons the budget cannot cover."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import translation

from backoffice.staff_actions import StaffAction, recorded_action, staff_audit
from core import clock
from coupons.errors import BudgetExhausted, CampaignInvalid, ClaimBudgetExhausted
from coupons.models import UserCoupon
from coupons.models.campaigns import Campaign
from coupons.services import grants
from coupons.services.campaigns import campaign_create, campaign_edit
from orders import services
from orders.models import Order
from orders.refunds import order_refund
from orders.selectors import coupon_options
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.campaigns import a_campaign
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.helpers import claim_url


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
        grants.coupon_grant(
            template_id=template.pk, user_ids=[user.pk], reason="补偿", granted_by_id=None
        )


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

    with pytest.raises(CampaignInvalid) as backwards:
        campaign_create(
            name="x",
            starts_at=now,
            ends_at=now - timedelta(hours=1),
            audit=staff_audit(staff, StaffAction.CAMPAIGN_CREATE),
        )
    with pytest.raises(CampaignInvalid) as taken:
        campaign_create(
            name="x", starts_at=now, ends_at=now + timedelta(days=1), template_ids=[theirs.pk]
        )
    campaign = campaign_create(
        name=" 618 ",
        starts_at=now,
        ends_at=now + timedelta(days=1),
        budget=900,
        template_ids=[mine.pk],
        audit=staff_audit(staff, StaffAction.CAMPAIGN_CREATE),
    )
    edited = campaign_edit(
        campaign_id=campaign.pk,
        changes={"budget": 1_200},
        template_ids=[],
        audit=staff_audit(staff, StaffAction.CAMPAIGN_EDIT),
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

    with pytest.raises(CampaignInvalid) as refused:
        campaign_edit(campaign_id=campaign.pk, changes={"budget": 400})

    assert set(refused.value.fields) == {"budget"}


# --- The admin API and the admin --------------------------------------------------------------


@pytest.mark.django_db
def test_staff_create_list_and_edit_a_campaign_through_the_api(staff_client):
    template = CouponTemplateFactory()
    body = {
        "name": "年货节",
        "starts_at": "2027-01-10T00:00:00+08:00",
        "ends_at": "2027-01-25T00:00:00+08:00",
        "budget": 500_000,
        "template_ids": [template.pk],
    }

    created = staff_client.post("/api/admin/campaigns", body, format="json")
    assert created.status_code == 201, created.json()
    campaign = created.json()
    edited = staff_client.patch(
        f"/api/admin/campaigns/{campaign['id']}", {"budget": None}, format="json"
    )
    listed = staff_client.get("/api/admin/campaigns")

    assert (campaign["budget"], campaign["spent"], campaign["budget_left"]) == (500_000, 0, 500_000)
    assert campaign["template_ids"] == [template.pk]
    assert edited.status_code == 200
    assert (edited.json()["budget"], edited.json()["budget_left"]) == (None, None)
    assert [row["id"] for row in listed.json()["results"]] == [campaign["id"]]


@pytest.mark.django_db
def test_the_api_names_a_bad_field_and_answers_404_for_an_unknown_campaign(staff_client):
    backwards = staff_client.post(
        "/api/admin/campaigns",
        {"name": "x", "starts_at": "2027-01-10T00:00:00Z", "ends_at": "2027-01-01T00:00:00Z"},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    unknown = staff_client.patch("/api/admin/campaigns/999999", {"name": "y"}, format="json")

    assert backwards.status_code == 400
    assert backwards.json()["fields"] == {"ends_at": ["须晚于开始时间。"]}
    assert backwards.json()["detail"] == "活动无效。"  # it said 优惠券模板无效
    assert unknown.status_code == 404


@pytest.mark.django_db
def test_a_budget_below_what_is_spent_is_refused_in_yuan(staff_client):
    campaign = a_campaign(10_000)
    Campaign.objects.filter(pk=campaign.pk).update(spent=3_990)

    lowered = staff_client.patch(
        f"/api/admin/campaigns/{campaign.pk}",
        {"budget": 100},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert lowered.status_code == 400
    assert lowered.json()["fields"] == {"budget": ["不能低于已花费的金额：¥39.90。"]}


@pytest.mark.django_db
def test_campaigns_need_their_permissions(client):
    viewer = staff_with(*VIEW_ONLY)
    campaign = a_campaign(100)

    assert bearer_client(viewer).get("/api/admin/campaigns").status_code == 403
    client.force_login(viewer)
    assert client.get(f"/admin/coupons/campaign/{campaign.pk}/change/").status_code == 403


@pytest.mark.django_db
def test_the_admin_creates_a_campaign_in_yuan_and_shows_its_budget_and_funnel(client):
    manager = staff_with("coupons.add_campaign", "coupons.change_campaign", "coupons.view_campaign")
    client.force_login(manager)
    template = CouponTemplateFactory(name="满100减20", value=2000)

    answer = client.post(
        "/admin/coupons/campaign/add/",
        {
            "name": "双十二",
            "starts_at_0": "2026-12-01",
            "starts_at_1": "00:00:00",
            "ends_at_0": "2027-12-13",
            "ends_at_1": "00:00:00",
            "budget": "3000.00",
            "templates": [template.pk],
        },
    )

    assert answer.status_code == 302, answer.context["adminform"].form.errors
    campaign = Campaign.objects.get()
    assert (campaign.budget, list(campaign.templates.all())) == (300_000, [template])
    page = client.get(
        f"/admin/coupons/campaign/{campaign.pk}/change/", HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    text = page.content.decode()
    assert "¥3,000.00" in text and "满100减20" in text
    assert LogEntry.objects.filter(user=manager).count() == 1


@pytest.mark.django_db
def test_the_audit_trail_says_a_campaign_s_budget_in_yuan(staff):
    from backoffice.audit_messages import audit_message

    campaign = a_campaign(None)
    campaign_edit(
        campaign_id=campaign.pk,
        changes={"budget": 123_400},
        audit=staff_audit(staff, StaffAction.CAMPAIGN_EDIT),
    )

    with translation.override("zh-hans"):
        said = audit_message(LogEntry.objects.get(user=staff))

    assert said == "修改了活动：优惠预算：从 不限预算 改为 ¥1,234.00。"


@pytest.mark.django_db
def test_the_audit_trail_names_a_campaign_s_templates(staff):
    from backoffice.audit_messages import audit_message

    now = clock.now()
    sale, gone = CouponTemplateFactory(name="双十二满减"), CouponTemplateFactory(name="x")
    campaign_create(
        name="双十二",
        starts_at=now,
        ends_at=now + timedelta(days=1),
        template_ids=[sale.pk, gone.pk],
        audit=staff_audit(staff, StaffAction.CAMPAIGN_CREATE),
    )
    gone_id = gone.pk
    gone.delete()

    with translation.override("zh-hans"):
        said = audit_message(LogEntry.objects.get(user=staff))

    assert f"双十二满减、#{gone_id}" in said, said
