"""Each coupon's own use window (SPEC section 10): stamped at issue, read by "mine", the ports,
checkout and the advisor; editing the template's window later changes only who may claim."""

from datetime import timedelta

import pytest

from coupons import ports
from coupons.errors import ClaimNotInWindow, CouponExpired
from coupons.issuing import service as issuing
from coupons.models import UserCoupon
from coupons.services import grants
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserFactory
from tests.support.helpers import claim_url

pytestmark = pytest.mark.django_db


def test_valid_days_stamps_a_window_from_the_claim(user, shopper_client, frozen_now):
    now = frozen_now.now()
    template = CouponTemplateFactory(
        valid_from=now - timedelta(hours=1), valid_until=now + timedelta(hours=1), valid_days=7
    )

    body = shopper_client.post(claim_url(template)).json()

    coupon = UserCoupon.objects.get()
    assert (coupon.valid_from, coupon.valid_until) == (now, now + timedelta(days=7))
    assert (body["valid_from"], body["valid_until"], body["source"]) == (
        "2026-06-01T12:00:00Z",
        "2026-06-08T12:00:00Z",
        "claim",
    )
    # long after the claim window ended, the coupon is still usable within its own days
    frozen_now(now + timedelta(days=6))
    assert shopper_client.get("/api/coupons/mine?status=unused").json()["count"] == 1
    assert ports.get_usable(user_id=user.pk, coupon_id=coupon.pk).valid_until == coupon.valid_until
    frozen_now(now + timedelta(days=7, milliseconds=1))
    assert shopper_client.get("/api/coupons/mine?status=expired").json()["count"] == 1
    with pytest.raises(CouponExpired):
        ports.get_usable(user_id=user.pk, coupon_id=coupon.pk)


def test_editing_the_template_window_after_a_claim_keeps_the_coupon_window(
    user, staff_client, frozen_now
):
    now = frozen_now.now()
    template = CouponTemplateFactory(
        valid_from=now - timedelta(days=1), valid_until=now + timedelta(days=10)
    )
    coupon = issuing.coupon_claim(template_id=template.pk, user_id=user.pk)
    assert (coupon.valid_from, coupon.valid_until) == (template.valid_from, template.valid_until)

    # staff close the claim window early
    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}",
        {"valid_until": (now + timedelta(minutes=1)).isoformat()},
        format="json",
    )
    assert response.status_code == 200
    frozen_now(now + timedelta(days=2))

    # nobody new may claim ...
    with pytest.raises(ClaimNotInWindow):
        issuing.coupon_claim(template_id=template.pk, user_id=UserFactory().pk)
    # ... but the coupon already held keeps its window: listed unused, usable at checkout
    mine = bearer_client(user).get("/api/coupons/mine?status=unused").json()["results"]
    assert [(item["id"], item["status"]) for item in mine] == [(coupon.pk, "unused")]
    assert mine[0]["valid_until"] == "2026-06-11T12:00:00Z"
    options = bearer_client(user).get("/api/orders/coupon-options?amount=9900").json()
    assert [(o["coupon_id"], o["usable"]) for o in options["results"]] == [(coupon.pk, True)]
    product = ProductFactory(price=9900)
    response = bearer_client(user).post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": coupon.pk},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["discount_amount"] == 500


def test_a_coupon_not_yet_started_is_not_usable(user, frozen_now):
    now = frozen_now.now()
    template = CouponTemplateFactory(
        valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2)
    )
    coupon = grants.coupon_grant(
        template_id=template.pk, user_ids=[user.pk], reason="early bird", granted_by_id=None
    )
    assert coupon.granted == [user.pk]
    held = UserCoupon.objects.get()
    assert (held.valid_from, held.valid_until) == (template.valid_from, template.valid_until)
    with pytest.raises(CouponExpired):  # "not valid at this time"
        ports.get_usable(user_id=user.pk, coupon_id=held.pk)
    options = bearer_client(user).get("/api/orders/coupon-options?amount=9900").json()
    assert [(o["usable"], o["reason"]) for o in options["results"]] == [(False, "not_started")]


def test_the_claim_answer_shows_the_template_terms_as_stored(shopper_client):
    template = CouponTemplateFactory(
        type="percent", value=12, max_discount=3000, scope="products", scope_ids=[4, 9]
    )

    body = shopper_client.post(claim_url(template)).json()

    summary = body["template"]
    assert (summary["type"], summary["value"], summary["max_discount"]) == ("percent", 12, 3000)
    assert (summary["scope"], summary["scope_ids"]) == ("products", [4, 9])
