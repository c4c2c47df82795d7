"""A database restored from a backup is recognised by its epoch (coupons/models/counter_epoch.py):
the scheduler's watch resets Redis's facts to it, so a template the restore gave room again
is not refused as sold out until the minute's reconcile (before: 38 of 46 probes refused)."""

from datetime import timedelta

import pytest

from core import clock
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.reconcile import coupon_counters_follow_the_database
from coupons.models import CounterEpoch, CouponTemplate, UserCoupon
from coupons.services import templates
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url

pytestmark = pytest.mark.django_db(transaction=True)


def claim(template) -> tuple[int, str | None]:
    response = bearer_client(UserFactory()).post(claim_url(template))
    return response.status_code, response.json().get("code")


def test_each_watch_raises_the_database_epoch_then_redis_to_it():
    lines = [coupon_counters_follow_the_database() for _ in range(3)]

    assert lines == [None, None, None]
    assert CounterEpoch.objects.get().epoch == 3
    assert coupon_counter().epoch() == 3


def test_a_database_set_back_in_time_is_recognised_and_its_room_is_claimable_at_once():
    # given: a template sold out, Redis knowing it, and the epochs at 5
    now = clock.now()
    template = templates.coupon_template_publish(
        name="Restored",
        type="direct",
        value=500,
        total=2,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(hours=1),
    )
    for _ in range(5):
        coupon_counters_follow_the_database()
    assert [claim(template)[0] for _ in range(2)] == [201, 201]
    for _ in range(3):
        coupon_counters_follow_the_database()  # the claims happened after epoch 5
    assert claim(template) == (409, "sold_out")

    # when: the database is put back as a backup taken at epoch 5 holds it (no coupons yet)
    UserCoupon.objects.filter(template=template).delete()
    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=0)
    CounterEpoch.objects.update(epoch=5)
    stale = claim(template)  # Redis still refuses on what the lost future showed
    line = coupon_counters_follow_the_database()

    # then
    assert stale == (409, "sold_out")
    assert line is not None and "Another timeline (database epoch 5;" in line
    assert (CounterEpoch.objects.get().epoch, coupon_counter().epoch()) == (9, 9)  # past both
    assert [claim(template)[0] for _ in range(3)] == [201, 201, 409]
    assert UserCoupon.objects.filter(template=template).count() == 2
    assert coupon_counters_follow_the_database() is None  # the epochs agree again
    assert (CounterEpoch.objects.get().epoch, coupon_counter().epoch()) == (10, 10)
