"""Codes and hidden templates (SPEC section 11): POST /api/coupons/redeem through the issuing
core, and hidden templates that no shopper can list, fetch or claim by id."""

from datetime import timedelta

import pytest

from backoffice.staff_actions import StaffAction, staff_audit
from core import clock
from coupons.issuing.terms_cache import terms_publish_new
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import templates
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url, redis_counts


def redeem(client, code):
    return client.post("/api/coupons/redeem", {"code": code}, format="json")


@pytest.mark.django_db
def test_redeem_claims_the_template_of_the_code_ignoring_case(user, shopper_client):
    template = CouponTemplateFactory(code="Spring-26", visibility="hidden")

    response = redeem(shopper_client, "sPRING-26")

    assert response.status_code == 201, response.json()
    body = response.json()
    coupon = UserCoupon.objects.get()
    assert (body["id"], body["template_id"], body["source"]) == (coupon.pk, template.pk, "code")
    assert (coupon.user_id, coupon.source, coupon.grant_reason) == (user.pk, "code", None)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("code", "status", "error"),
    [
        ("NOPE-NOPE", 404, "not_found"),  # unknown
        ("abc", 400, "invalid"),  # malformed: too short
        ("has space", 400, "invalid"),
        ("x" * 33, 400, "invalid"),
        ("", 400, "invalid"),
    ],
)
def test_unknown_and_malformed_codes(shopper_client, code, status, error):
    CouponTemplateFactory(code="REAL-CODE")

    response = redeem(shopper_client, code)

    assert (response.status_code, response.json()["code"]) == (status, error)
    if status == 400:
        assert list(response.json()["fields"]) == ["code"]
    assert UserCoupon.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("setup", "error"),
    [
        ({"total": 1, "claimed": 1}, "sold_out"),
        ({"per_user_limit": 1, "mine": 1}, "limit_reached"),
        ({"window": "ended"}, "not_in_window"),
        ({"window": "not_started"}, "not_in_window"),
    ],
)
def test_redeem_answers_like_a_claim(user, shopper_client, setup, error):
    now = clock.now()
    window = {
        "ended": {"valid_from": now - timedelta(days=2), "valid_until": now - timedelta(days=1)},
        "not_started": {
            "valid_from": now + timedelta(days=1),
            "valid_until": now + timedelta(days=2),
        },
    }.get(setup.get("window"), {})
    template = CouponTemplateFactory(
        code="ANSWER",
        total=setup.get("total", 10),
        per_user_limit=setup.get("per_user_limit", 1),
        **window,
    )
    if setup.get("claimed"):
        UserCouponFactory(template=template)
    if setup.get("mine"):
        UserCouponFactory(template=template, user=user)
    before = UserCoupon.objects.count()

    response = redeem(shopper_client, "answer")

    assert (response.status_code, response.json()["code"]) == (409, error)
    assert UserCoupon.objects.count() == before


@pytest.mark.django_db
def test_hidden_templates_are_not_listed_nor_claimable_by_id(user, shopper_client, staff_client):
    public = CouponTemplateFactory(name="Public")
    hidden = CouponTemplateFactory(name="Hidden", visibility="hidden", code="SECRET-1")

    listed = [item["id"] for item in shopper_client.get("/api/coupons").json()["results"]]
    claim_hidden = shopper_client.post(claim_url(hidden))
    claim_missing = shopper_client.post(f"/api/coupons/{hidden.pk + 1000}/claim")

    assert listed == [public.pk]
    assert shopper_client.get("/api/coupons").json()["count"] == 1
    # the same answer as for an id that does not exist: nothing tells them apart
    assert (claim_hidden.status_code, claim_hidden.json()) == (
        claim_missing.status_code,
        claim_missing.json(),
    )
    assert claim_hidden.status_code == 404
    assert UserCoupon.objects.count() == 0
    # staff still see and manage it; the code reaches it
    admin_ids = [t["id"] for t in staff_client.get("/api/admin/coupons").json()["results"]]
    assert hidden.pk in admin_ids
    assert redeem(shopper_client, "secret-1").status_code == 201
    # its holder sees their coupon in "mine"
    mine = shopper_client.get("/api/coupons/mine").json()["results"]
    assert [item["template_id"] for item in mine] == [hidden.pk]


@pytest.mark.django_db(transaction=True)
def test_60_users_racing_one_code_with_total_10_get_exactly_10():
    template = CouponTemplateFactory(code="RUSH-HOUR", total=10, visibility="hidden")
    users = [UserFactory() for _ in range(60)]

    responses = run_together(
        [lambda user=user: redeem(bearer_client(user), "rush-hour") for user in users]
    )

    assert sorted(r.status_code for r in responses) == [201] * 10 + [409] * 50
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"sold_out"}
    template.refresh_from_db()
    assert template.claimed_count == 10
    assert UserCoupon.objects.filter(template=template, source="code").count() == 10
    assert redis_counts(template.pk, users[0].pk)[0] == 10


@pytest.mark.django_db
def test_a_shopper_cannot_read_templates_through_the_admin_api(shopper_client):
    hidden = CouponTemplateFactory(visibility="hidden", code="SECRET-2")
    response = shopper_client.get(f"/api/admin/coupons/{hidden.pk}")
    assert response.status_code == 403
    assert "SECRET-2" not in response.content.decode()
    assert CouponTemplate.objects.count() == 1


@pytest.mark.django_db
def test_redeem_is_throttled_per_user_at_the_spec_rate(settings, user, shopper_client):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "redeem": "10/min"}
    CouponTemplateFactory(code="LIMITED", per_user_limit=1)

    answers = [redeem(shopper_client, "wrong-code").status_code for _ in range(10)]
    throttled = redeem(shopper_client, "LIMITED")

    assert answers == [404] * 10
    assert (throttled.status_code, throttled.json()["code"]) == (429, "throttled")
    assert "Retry-After" in throttled.headers
    assert UserCoupon.objects.count() == 0
    assert redeem(bearer_client(UserFactory()), "LIMITED").status_code == 201  # per user


@pytest.mark.django_db
def test_a_retried_redeem_replays_its_coupon(user, shopper_client):
    CouponTemplateFactory(code="ONCE-ONLY", per_user_limit=5)
    send = lambda: shopper_client.post(  # noqa: E731
        "/api/coupons/redeem", {"code": "ONCE-ONLY"}, format="json", HTTP_IDEMPOTENCY_KEY="r-1"
    )

    first, retry = send(), send()

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert UserCoupon.objects.count() == 1


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param({"visibility": "hidden", "total": 1, "code": "HID-1"}, id="hidden-sold-out"),
        pytest.param({"visibility": "hidden", "ended": True}, id="hidden-ended"),
        pytest.param({"visibility": "hidden", "paused": True}, id="hidden-paused"),
        pytest.param({"single_use_codes": True, "ended": True}, id="codes-only-ended"),
    ],
)
@pytest.mark.django_db
def test_a_claim_by_id_of_a_template_it_cannot_reach_is_404_whatever_its_state(
    shopper_client, staff, setup
):
    """Issue 21: with the terms in Redis, a hidden template that had sold out, ended or was
    paused answered a claim by id 409 (telling it exists), not 404 like a missing one."""
    now = clock.now()
    terms = {k: v for k, v in setup.items() if k in ("visibility", "total", "code")}
    if setup.get("ended"):
        terms |= {"valid_from": now - timedelta(days=2), "valid_until": now - timedelta(days=1)}
    template = CouponTemplateFactory(**terms)
    if setup.get("single_use_codes"):
        CouponTemplate.objects.filter(pk=template.pk).update(has_single_use_codes=True)
        template.refresh_from_db()
    if setup.get("paused"):
        templates.coupon_template_pause(
            template_id=template.pk, audit=staff_audit(staff, StaffAction.TEMPLATE_PAUSE)
        )
    template.refresh_from_db()
    terms_publish_new(template)  # as publishing (or any staff change) leaves them
    if "code" in setup:  # the one coupon goes by its code, and Redis learns it is sold out
        assert redeem(bearer_client(UserFactory()), setup["code"]).status_code == 201
    missing = shopper_client.post(f"/api/coupons/{template.pk + 1000}/claim")

    answers = [shopper_client.post(claim_url(template)) for _ in range(2)]

    assert [a.status_code for a in answers] == [404, 404]
    assert [a.json() for a in answers] == [missing.json()] * 2
    assert not UserCoupon.objects.filter(source="claim").exists()
