"""A coupon's status (unused, used, expired by its OWN use window) is one definition, and the
shopper's list, the orders' port and the admin's status filter all agree with it (issue 14)."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from core import clock
from coupons import ports, selectors
from tests.support.factories import CouponTemplateFactory, UserCouponFactory

STATUSES = ("unused", "used", "expired")


@pytest.fixture
def coupons_in_every_state(user, frozen_now):
    """One user's coupons, named by the status they must have now. The traps: a `valid_days`
    coupon whose own window ended while its template is still open, and a coupon still within
    its own window although its template's claim window ended."""
    now = clock.now()
    open_template = CouponTemplateFactory(
        valid_from=now - timedelta(days=30), valid_until=now + timedelta(days=30)
    )
    ended_template = CouponTemplateFactory(
        valid_from=now - timedelta(days=30), valid_until=now - timedelta(days=1)
    )
    days_template = CouponTemplateFactory(
        valid_from=now - timedelta(days=30), valid_until=now + timedelta(days=30), valid_days=3
    )
    coupons = {
        "unused": UserCouponFactory(user=user, template=open_template),
        "used": UserCouponFactory(
            user=user, template=open_template, status="used", used_at=now - timedelta(hours=1)
        ),
        # Its own window (3 days from the claim) ended; its template is open for 30 more days.
        "expired by its own window": UserCouponFactory(
            user=user,
            template=days_template,
            valid_from=now - timedelta(days=5),
            valid_until=now - timedelta(days=2),
        ),
        # Its template stopped handing out coupons yesterday; its own window runs for a week.
        "unused past its template's end": UserCouponFactory(
            user=user,
            template=ended_template,
            valid_from=now - timedelta(days=5),
            valid_until=now + timedelta(days=7),
        ),
    }
    expected = {
        "unused": "unused",
        "used": "used",
        "expired by its own window": "expired",
        "unused past its template's end": "unused",
    }
    return user, coupons, expected


def ids_by_status(coupons, expected) -> dict[str, set[int]]:
    return {
        status: {coupons[name].pk for name, wanted in expected.items() if wanted == status}
        for status in STATUSES
    }


def test_the_admin_status_filter_puts_each_coupon_in_exactly_its_status(
    admin_site, coupons_in_every_state
):
    user, coupons, expected = coupons_in_every_state

    shown = {}
    for status in STATUSES:
        response = admin_site.get(f"/admin/coupons/usercoupon/?status={status}&q={user.username}")
        assert response.status_code == 200
        shown[status] = {coupon.pk for coupon in response.context["cl"].result_list}

    assert shown == ids_by_status(coupons, expected)


def test_the_shopper_list_and_the_orders_port_agree_with_the_status(
    coupons_in_every_state,
):
    user, coupons, expected = coupons_in_every_state
    client = APIClient()
    client.force_authenticate(user)

    listed = {}
    for status in STATUSES:
        body = client.get(f"/api/coupons/mine?status={status}").json()
        listed[status] = {item["id"] for item in body["results"]}
        assert all(item["status"] == status for item in body["results"])
    usable_at_checkout = {coupon.coupon_id for coupon in ports.list_unused(user_id=user.pk)}

    assert listed == ids_by_status(coupons, expected)
    assert usable_at_checkout == listed["unused"]


def test_one_coupon_at_a_time_has_the_status_the_queries_give_it(coupons_in_every_state):
    _user, coupons, expected = coupons_in_every_state
    assert {
        name: selectors.derived_status(coupon, now=clock.now()) for name, coupon in coupons.items()
    } == expected
