"""Claims as a shopper makes them, on templates published through the service."""

from datetime import timedelta

from core import clock
from coupons.models import CouponTemplate
from coupons.services import templates
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url


def publish(**terms) -> CouponTemplate:
    """A template published through the service, so its terms are cached in Redis."""
    now = clock.now()
    defaults = {
        "name": "Flash",
        "type": "direct",
        "value": 500,
        "total": 10,
        "valid_from": now - timedelta(hours=1),
        "valid_until": now + timedelta(hours=1),
    }
    return templates.coupon_template_publish(**(defaults | terms))


def claim(user, template) -> tuple[int, str | None]:
    response = bearer_client(user).post(claim_url(template))
    return response.status_code, response.json().get("code")


def sell_out(template) -> list:
    """Claim every coupon, so the database shows it sold out and Redis records that; returns
    the users who hold them."""
    holders = UserFactory.create_batch(template.total)
    for user in holders:
        assert claim(user, template)[0] == 201
    return holders
