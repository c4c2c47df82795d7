"""Coupons issued by events (SPEC section 28): a new account earns the sign-up templates, a
paid order of at least the minimum earns the paid-order templates, once per event however
often it is retried; the scheduler issues them with the event as source and reason, retries
what may pass later and refuses what cannot; a refund withdraws what the order earned and
takes back an unused coupon; a payment never waits for or fails on its coupons."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model

from core import clock
from coupons.auto_issue.events import coupon_take_back
from coupons.auto_issue.jobs import auto_issue_due
from coupons.coupon_status import CouponStatus
from coupons.errors import CouponExpired, CouponWithdrawn, TemplateInvalid
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.auto_issue import AutoIssueTask
from coupons.services import grants, templates
from orders import services
from orders.refunds import order_refund
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)

SIGNUP = CouponTemplate.AutoIssue.SIGNUP
PAID_ORDER = CouponTemplate.AutoIssue.PAID_ORDER


def coupons_of(user, template) -> list[UserCoupon]:
    return list(UserCoupon.objects.filter(user=user, template=template))


def paid_order(user, price: int):
    product = ProductFactory(price=price, stock=10)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    return services.order_pay(user_id=user.pk, order_id=order.pk, amount=order.pay_amount)


@pytest.mark.django_db
def test_a_new_account_earns_the_sign_up_coupon_once():
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, visibility="hidden", total=10)
    ended = clock.now() - timedelta(days=1)
    CouponTemplateFactory(
        auto_issue=SIGNUP, valid_from=ended - timedelta(days=1), valid_until=ended
    )

    user = get_user_model().objects.create_user("newcomer", password="pass-word-123")
    auto_issue_due()
    auto_issue_due()

    (coupon,) = coupons_of(user, welcome)
    assert (coupon.source, coupon.grant_reason) == ("signup", "auto:signup")
    assert AutoIssueTask.objects.get().state == AutoIssueTask.State.ISSUED


@pytest.mark.django_db
def test_a_paid_order_at_the_minimum_earns_the_coupon_once_for_that_order():
    back = CouponTemplateFactory(
        auto_issue=PAID_ORDER, auto_issue_min_pay=10_000, total=10, per_user_limit=5
    )
    buyer = UserFactory()

    small = paid_order(buyer, 9_999)
    large = paid_order(buyer, 10_000)
    auto_issue_due()

    (coupon,) = coupons_of(buyer, back)
    assert (coupon.source, coupon.grant_reason) == ("order", f"auto:order {large.pk}")
    assert not AutoIssueTask.objects.filter(order_id=small.pk).exists()


@pytest.mark.django_db
def test_a_refund_withdraws_what_the_order_earned():
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    issued, pending = paid_order(buyer, 5_000), None
    auto_issue_due()
    pending = paid_order(buyer, 6_000)  # refunded before the scheduler ran

    order_refund(order_id=issued.pk, reason="退货")
    order_refund(order_id=pending.pk, reason="退货")
    auto_issue_due()

    (taken_back,) = coupons_of(buyer, back)
    assert taken_back.status_at(clock.now() + timedelta(milliseconds=1)) == CouponStatus.EXPIRED
    assert set(AutoIssueTask.objects.values_list("state", flat=True)) == {"withdrawn"}


@pytest.mark.django_db
def test_what_cannot_issue_is_refused_and_a_pause_is_waited_out(frozen_now):
    sold_out = CouponTemplateFactory(auto_issue=SIGNUP, total=1, claimed_count=1)
    paused = CouponTemplateFactory(auto_issue=SIGNUP, total=10)
    templates.coupon_template_pause(template_id=paused.pk)
    user = UserFactory()

    auto_issue_due()
    waiting = AutoIssueTask.objects.get(template=paused)
    templates.coupon_template_resume(template_id=paused.pk)
    frozen_now(frozen_now.now() + timedelta(seconds=3))
    auto_issue_due()

    assert AutoIssueTask.objects.get(template=sold_out).state == "refused"
    assert AutoIssueTask.objects.get(template=sold_out).last_error == "sold_out"
    assert (waiting.state, waiting.last_error, waiting.attempts) == ("pending", "paused", 1)
    assert waiting.next_attempt_at == frozen_now.now() - timedelta(seconds=1)
    assert len(coupons_of(user, paused)) == 1
    assert coupons_of(user, sold_out) == []


@pytest.mark.django_db
def test_a_payment_does_not_wait_for_its_coupons_nor_fail_on_them():
    CouponTemplateFactory(auto_issue=PAID_ORDER, total=1, claimed_count=1)  # sold out
    buyer = UserFactory()

    order = paid_order(buyer, 5_000)

    assert order.status == "paid"
    assert UserCoupon.objects.filter(user=buyer).count() == 0  # nothing issued in the payment
    auto_issue_due()
    assert AutoIssueTask.objects.get().state == "refused"


@pytest.mark.django_db(transaction=True)
def test_schedulers_racing_issue_each_coupon_exactly_once():
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, total=100)
    users = [UserFactory() for _ in range(20)]

    run_together([auto_issue_due for _ in range(4)])

    assert sorted(c.user_id for c in UserCoupon.objects.filter(template=welcome)) == sorted(
        user.pk for user in users
    )
    assert set(AutoIssueTask.objects.values_list("state", flat=True)) == {"issued"}


@pytest.mark.django_db
def test_staff_publish_an_event_coupon_and_a_minimum_needs_a_paid_order_coupon(staff_client):
    terms = {
        "name": "满100返10",
        "type": "direct",
        "value": 1000,
        "total": 1000,
        "valid_from": "2026-01-01T00:00:00Z",
        "valid_until": "2036-01-01T00:00:00Z",
        "visibility": "hidden",
    }

    good = staff_client.post(
        "/api/admin/coupons",
        {**terms, "auto_issue": "paid_order", "auto_issue_min_pay": 10_000},
        format="json",
    )
    bad = staff_client.post(
        "/api/admin/coupons",
        {**terms, "auto_issue": "signup", "auto_issue_min_pay": 10_000},
        format="json",
    )

    assert good.status_code == 201, good.json()
    assert (good.json()["auto_issue"], good.json()["auto_issue_min_pay"]) == ("paid_order", 10_000)
    assert bad.status_code == 400 and set(bad.json()["fields"]) == {"auto_issue_min_pay"}
    assert bearer_client(UserFactory()).get("/api/coupons").json()["results"] == []


@pytest.mark.django_db
def test_the_admin_lists_what_events_earned_read_only(client):
    CouponTemplateFactory(name="注册礼", auto_issue=SIGNUP, total=10)
    UserFactory(username="lin")
    auto_issue_due()
    client.force_login(get_user_model().objects.create_superuser("root", password="pass-word-123"))

    page = client.get("/admin/coupons/autoissuetask/", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert page.status_code == 200
    text = page.content.decode()
    assert "注册礼" in text and "lin" in text
    assert client.get("/admin/coupons/autoissuetask/add/").status_code == 403


@pytest.mark.django_db
def test_a_template_no_longer_issued_by_the_event_refuses_its_waiting_tasks():
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, total=10)
    user = UserFactory()
    CouponTemplate.objects.filter(pk=welcome.pk).update(auto_issue=CouponTemplate.AutoIssue.NONE)

    auto_issue_due()

    task = AutoIssueTask.objects.get()
    assert (task.state, task.last_error) == ("refused", "not_issued_by_event")
    assert coupons_of(user, welcome) == []


@pytest.mark.django_db
def test_a_staff_grant_for_an_order_does_not_stand_for_the_order_s_coupon():
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    order = paid_order(buyer, 5_000)
    grants.coupon_grant(
        template_id=back.pk, user_ids=[buyer.pk], reason=f"order {order.pk}", granted_by_id=None
    )

    auto_issue_due()

    assert sorted(c.source for c in coupons_of(buyer, back)) == ["grant", "order"]


@pytest.mark.django_db
def test_a_coupon_taken_back_before_its_window_opens_is_expired_at_once():
    later = clock.now() + timedelta(days=2)
    template = CouponTemplateFactory(
        auto_issue=PAID_ORDER, total=10, valid_from=clock.now() - timedelta(days=1)
    )
    coupon = UserCouponFactory(
        template=template, valid_from=later, valid_until=later + timedelta(days=7)
    )

    assert coupon_take_back(coupon.pk) is True

    coupon.refresh_from_db()
    assert coupon.valid_until <= clock.now()
    assert coupon.status_at(clock.now() + timedelta(milliseconds=1)) == CouponStatus.EXPIRED


def earned_coupon(buyer, back) -> tuple[object, UserCoupon]:
    """A paid order and the coupon it earned (issued)."""
    earning = paid_order(buyer, 5_000)
    auto_issue_due()
    (coupon,) = coupons_of(buyer, back)
    return earning, coupon


def checkout_with(buyer, coupon):
    product = ProductFactory(price=20_000, stock=10)
    return services.order_checkout(
        user_id=buyer.pk, items=[{"product_id": product.pk, "quantity": 1}], coupon_id=coupon.pk
    )


@pytest.mark.django_db
def test_a_coupon_held_by_an_unpaid_order_is_withdrawn_by_the_refund_and_cannot_pay_or_return():
    """An attack: the earned coupon put in an unpaid order (used), the earning order refunded
    (a used coupon was kept), the unpaid order cancelled: the coupon was unused and valid
    again, once per order. Now it is taken back whatever it is doing."""
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    earning, coupon = earned_coupon(buyer, back)
    holding = checkout_with(buyer, coupon)

    order_refund(order_id=earning.pk, reason="退货")
    with pytest.raises(CouponWithdrawn):
        services.order_pay(user_id=buyer.pk, order_id=holding.pk, amount=holding.pay_amount)
    services.order_cancel(user_id=buyer.pk, order_id=holding.pk)

    coupon.refresh_from_db()
    assert coupon.withdrawn_at is not None
    assert coupon.status_at(clock.now() + timedelta(milliseconds=1)) == CouponStatus.EXPIRED
    with pytest.raises(CouponExpired):
        checkout_with(buyer, coupon)
    assert AutoIssueTask.objects.get(order_id=earning.pk).state == "withdrawn"


@pytest.mark.django_db
def test_a_coupon_returned_by_a_cancel_before_the_refund_is_withdrawn_too():
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    earning, coupon = earned_coupon(buyer, back)
    holding = checkout_with(buyer, coupon)
    services.order_cancel(user_id=buyer.pk, order_id=holding.pk)  # unused again

    order_refund(order_id=earning.pk, reason="退货")

    coupon.refresh_from_db()
    assert coupon.status_at(clock.now() + timedelta(milliseconds=1)) == CouponStatus.EXPIRED


@pytest.mark.django_db
def test_a_coupon_spent_on_a_paid_order_stays_used_and_a_refund_of_that_order_keeps_it_spent():
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    earning, coupon = earned_coupon(buyer, back)
    spending = checkout_with(buyer, coupon)
    services.order_pay(user_id=buyer.pk, order_id=spending.pk, amount=spending.pay_amount)

    order_refund(order_id=earning.pk, reason="退货")
    order_refund(order_id=spending.pk, reason="退货")

    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.USED  # its discount was given; it comes not back


@pytest.mark.django_db
@pytest.mark.parametrize(
    "reason",
    ["auto:order 51", "AUTO:ORDER 52", "ａｕｔｏ:ｏｒｄｅｒ 53", " auto:order 54 ", "Auto:Signup",
     "auto : signup", "ａｕｔｏ：order 55"],
)  # fmt: skip
def test_a_grant_s_reason_never_begins_like_an_event_s(reason):
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()

    with pytest.raises(TemplateInvalid) as refused:
        grants.coupon_grant(
            template_id=back.pk, user_ids=[buyer.pk], reason=reason, granted_by_id=None
        )

    assert "reason" in refused.value.fields
    assert not UserCoupon.objects.exists()


@pytest.mark.django_db
def test_an_event_whose_reason_a_grant_holds_is_refused_not_issued_with_no_coupon():
    """Grants made before the rule may hold an event's reason: the task says so."""
    back = CouponTemplateFactory(auto_issue=PAID_ORDER, total=10, per_user_limit=5)
    buyer = UserFactory()
    order = paid_order(buyer, 5_000)
    UserCouponFactory(
        template=back, user=buyer, source="grant", grant_reason=f"auto:order {order.pk}"
    )

    auto_issue_due()

    task = AutoIssueTask.objects.get(order_id=order.pk)
    assert (task.state, task.last_error, task.coupon_id) == (
        "refused",
        "reason_held_by_a_grant",
        None,
    )


@pytest.mark.django_db
def test_a_task_whose_coupon_was_issued_before_a_crash_settles_issued_not_refused():
    """Found by the worker drill: killed between the issue and the settle, the task was
    retried and refused limit_reached, its coupon being the one that reached the limit."""
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, visibility="hidden", total=10)
    user = get_user_model().objects.create_user("crashed", password="pass-word-123")
    auto_issue_due()
    (coupon,) = coupons_of(user, welcome)
    AutoIssueTask.objects.update(state="pending", coupon_id=None, next_attempt_at=clock.now())

    auto_issue_due()

    task = AutoIssueTask.objects.get()
    assert (task.state, task.coupon_id) == ("issued", coupon.pk)
    assert coupons_of(user, welcome) == [coupon]
