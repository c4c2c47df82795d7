"""Pause and resume (SPEC section 18): a paused template issues nothing (claims, codes and
grants answer 409 paused), the shopper list shows it as paused, coupons already held stay
usable, and resuming takes effect before the call returns."""

import threading
import time

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.utils.translation import ngettext

from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes, grants, templates
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import (
    CouponTemplateFactory,
    PaidOrderFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.helpers import claim_url


def pause(client, template_id):
    return client.post(f"/api/admin/coupons/{template_id}/pause")


def resume(client, template_id):
    return client.post(f"/api/admin/coupons/{template_id}/resume")


@pytest.mark.django_db
def test_pause_and_resume_are_idempotent_and_shown_to_staff(staff_client, frozen_now):
    template = CouponTemplateFactory()
    paused_at = frozen_now.now()

    first = pause(staff_client, template.pk)
    frozen_now(paused_at.replace(minute=30))
    again = pause(staff_client, template.pk)

    assert first.status_code == again.status_code == 200
    assert first.json()["paused_at"] == again.json()["paused_at"] == "2026-06-01T12:00:00Z"
    template.refresh_from_db()
    assert template.paused_at == paused_at  # the second pause kept the first moment

    resumed = resume(staff_client, template.pk)
    resumed_again = resume(staff_client, template.pk)
    assert resumed.status_code == resumed_again.status_code == 200
    assert resumed.json()["paused_at"] is None
    template.refresh_from_db()
    assert template.paused_at is None


@pytest.mark.django_db
def test_pause_of_an_unknown_template_is_404_and_shoppers_are_refused(staff_client, shopper_client):
    template = CouponTemplateFactory()

    assert pause(staff_client, 999_999).json()["code"] == "not_found"
    assert resume(staff_client, 999_999).status_code == 404
    assert pause(shopper_client, template.pk).status_code == 403
    assert resume(shopper_client, template.pk).status_code == 403
    template.refresh_from_db()
    assert template.paused_at is None


@pytest.mark.django_db
def test_a_paused_template_refuses_claims_codes_and_grants_with_nothing_written(
    user, shopper_client, staff_client
):
    claimable = CouponTemplateFactory(code="SPRING-26")
    with_codes = CouponTemplateFactory(visibility="hidden")
    codes.single_use_codes_create(template_id=with_codes.pk, count=1)
    single_use = SingleUseCode.objects.get(template=with_codes)
    for template in (claimable, with_codes):
        templates.coupon_template_pause(template_id=template.pk)

    claim = shopper_client.post(claim_url(claimable))
    by_code = shopper_client.post("/api/coupons/redeem", {"code": "spring-26"}, format="json")
    by_single_use = shopper_client.post(
        "/api/coupons/redeem", {"code": single_use.code}, format="json"
    )
    grant = staff_client.post(
        f"/api/admin/coupons/{claimable.pk}/grants",
        {"user_ids": [user.pk], "reason": "sorry"},
        format="json",
    )

    for response in (claim, by_code, by_single_use, grant):
        assert response.status_code == 409, response.json()
        assert response.json()["code"] == "paused"
    assert UserCoupon.objects.count() == 0
    assert CouponTemplate.objects.filter(claimed_count=0).count() == 2
    single_use.refresh_from_db()
    assert (single_use.used_by_id, single_use.used_at) == (None, None)  # still redeemable


@pytest.mark.django_db
def test_resume_takes_effect_before_it_returns(user, shopper_client, staff_client):
    template = CouponTemplateFactory()
    pause(staff_client, template.pk)
    assert shopper_client.post(claim_url(template)).json()["code"] == "paused"

    resume(staff_client, template.pk)

    response = shopper_client.post(claim_url(template))
    assert response.status_code == 201, response.json()


@pytest.mark.django_db
def test_the_shopper_list_shows_a_paused_template_as_paused(shopper_client):
    paused = CouponTemplateFactory()
    open_one = CouponTemplateFactory()
    templates.coupon_template_pause(template_id=paused.pk)

    states = {
        item["id"]: item["state"] for item in shopper_client.get("/api/coupons").json()["results"]
    }

    assert states == {paused.pk: "paused", open_one.pk: "claimable"}


@pytest.mark.django_db
def test_coupons_already_held_stay_usable_at_checkout(user, shopper_client):
    template = CouponTemplateFactory(value=500)
    coupon = UserCouponFactory(template=template, user=user)
    product = ProductFactory(price=2000, stock=5)
    templates.coupon_template_pause(template_id=template.pk)

    response = shopper_client.post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": coupon.pk},
        format="json",
    )

    assert response.status_code == 201, response.json()
    assert (response.json()["discount_amount"], response.json()["pay_amount"]) == (500, 1500)
    coupon.refresh_from_db()
    assert coupon.status == "used"


@pytest.mark.django_db(transaction=True)
def test_a_grant_racing_a_pause_issues_only_before_the_pause(monkeypatch):
    """The grant issues batch by batch under the claim's row lock; the pause takes the same
    lock. Whatever the interleaving: the users granted come first in the order given, every
    later one is reported `paused`, nothing is issued after the pause committed."""
    monkeypatch.setattr(grants, "GRANT_BATCH_SIZE", 10)
    template = CouponTemplateFactory(total=1000, per_user_limit=1)
    users = [UserFactory().pk for _ in range(150)]
    started = threading.Event()

    def grant():
        return grants.coupon_grant(
            template_id=template.pk,
            user_ids=users,
            reason="race",
            granted_by_id=None,
            on_batch=lambda done, _batch: started.set() if done == 20 else None,
        )

    def pause_mid_grant():
        started.wait(timeout=30)
        time.sleep(0.02)
        return templates.coupon_template_pause(template_id=template.pk)

    result, paused = run_together([grant, pause_mid_grant])

    granted = len(result.granted)
    assert 20 <= granted < len(users)
    assert result.granted == users[:granted]
    assert result.paused == users[granted:]
    assert (result.sold_out, result.limit_reached, result.not_eligible) == ([], [], [])
    issued = UserCoupon.objects.filter(template=template)
    assert sorted(issued.values_list("user_id", flat=True)) == sorted(result.granted)
    template.refresh_from_db()
    assert template.claimed_count == granted
    assert all(coupon.created_at <= template.paused_at for coupon in issued)


@pytest.mark.django_db(transaction=True)
def test_claims_racing_a_pause_never_issue_after_it():
    template = CouponTemplateFactory(total=1000, per_user_limit=1)
    users = [UserFactory() for _ in range(30)]

    def pause_now():
        templates.coupon_template_pause(template_id=template.pk)
        return None

    responses = run_together(
        [
            pause_now,
            *(lambda user=user: bearer_client(user).post(claim_url(template)) for user in users),
        ]
    )[1:]

    codes_seen = sorted(r.status_code for r in responses)
    assert set(codes_seen) <= {201, 409}
    assert {r.json()["code"] for r in responses if r.status_code == 409} <= {"paused"}
    template.refresh_from_db()
    issued = UserCoupon.objects.filter(template=template)
    assert issued.count() == template.claimed_count == codes_seen.count(201)
    assert all(coupon.created_at <= template.paused_at for coupon in issued)


@pytest.mark.django_db
def test_the_admin_actions_pause_and_resume_with_the_change_permission(client, admin_site):
    template = CouponTemplateFactory()
    url = "/admin/coupons/coupontemplate/"

    admin_site.post(url, {"action": "pause_templates", "_selected_action": [template.pk]})
    template.refresh_from_db()
    assert template.paused_at is not None
    admin_site.post(url, {"action": "resume_templates", "_selected_action": [template.pk]})
    template.refresh_from_db()
    assert template.paused_at is None

    # A staff member who may only view templates gets neither action.
    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_coupontemplate"))
    client.force_login(viewer)
    page = client.get(url).content.decode()
    assert "pause_templates" not in page and "resume_templates" not in page
    client.post(url, {"action": "pause_templates", "_selected_action": [template.pk]})
    template.refresh_from_db()
    assert template.paused_at is None


@pytest.mark.django_db
def test_the_new_refusals_speak_chinese_when_asked(user, shopper_client):
    paused = CouponTemplateFactory()
    templates.coupon_template_pause(template_id=paused.pk)
    for_new = CouponTemplateFactory(audience="new_customers")

    PaidOrderFactory(user=user)
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}

    assert shopper_client.post(claim_url(paused), **zh).json() == {
        "code": "paused",
        "detail": "该优惠券已暂停发放。",
    }
    assert shopper_client.post(claim_url(for_new), **zh).json() == {
        "code": "not_eligible",
        "detail": "该优惠券仅限新用户领取（尚无已支付订单）。",
    }


@pytest.mark.django_db
def test_redis_refuses_a_paused_template_on_the_published_terms_and_forgets_it_on_resume(
    user, django_capture_on_commit_callbacks
):
    from core import clock
    from coupons.issuing.counter_setup import coupon_counter
    from coupons.issuing.screen_answers import CouponMayHaveRoom, CouponRefused, ScreenAnswer

    template = CouponTemplateFactory()

    def screen():
        return coupon_counter().screen(
            template_id=template.pk,
            user_id=user.pk,
            now=clock.now(),
            throttle_limit=1000,
            window=1,
            throttle_period=60,
        )

    with django_capture_on_commit_callbacks(execute=True):
        templates.coupon_template_pause(template_id=template.pk)
    assert screen() == CouponRefused(ScreenAnswer.PAUSED)  # refused in Redis, no database statement

    with django_capture_on_commit_callbacks(execute=True):
        templates.coupon_template_resume(template_id=template.pk)
    assert isinstance(screen(), CouponMayHaveRoom)


@pytest.mark.django_db
def test_pause_and_resume_from_a_filtered_list_count_the_templates_they_changed(admin_site):
    """Issue 21: from the list filtered to active templates, pausing two said "0 个模板" (the
    filtered queryset, counted after the change, held none); a template already in the state
    is not counted either."""
    active = [CouponTemplateFactory(), CouponTemplateFactory()]
    already = CouponTemplateFactory()
    templates.coupon_template_pause(template_id=already.pk)
    url = "/admin/coupons/coupontemplate/"

    def action_message(query: str, action: str, selected: list) -> str:
        response = admin_site.post(
            url + query, {"action": action, "_selected_action": [t.pk for t in selected]}
        )
        return [str(m) for m in get_messages(response.wsgi_request)][-1]  # this action's

    def counted(verb: str, count: int) -> str:
        return ngettext(f"%(count)d template {verb}.", f"%(count)d templates {verb}.", count) % {
            "count": count
        }

    paused = action_message("?state=active", "pause_templates", active)
    resumed = action_message("?state=paused", "resume_templates", [*active, already])
    again = action_message("", "resume_templates", active)

    assert (paused, resumed, again) == (
        counted("paused", 2),
        counted("resumed", 3),
        counted("resumed", 0),
    )
    assert CouponTemplate.objects.filter(paused_at__isnull=False).count() == 0
