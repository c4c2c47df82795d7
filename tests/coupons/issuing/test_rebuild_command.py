from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from coupons.issuing.counter_setup import coupon_counter
from tests.support.factories import CouponTemplateFactory, UserCouponFactory
from tests.support.helpers import redis_counts, use_counter_at

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WINDOW = {"now": NOW, "valid_until": NOW + timedelta(days=1)}


def test_rebuild_all_sets_totals_to_the_database_and_drops_user_counters():
    first, second = CouponTemplateFactory(), CouponTemplateFactory()
    holder = UserCouponFactory(template=first).user
    UserCouponFactory(template=first)
    counter = coupon_counter()
    counter.record(
        template_id=first.pk, incarnation=first.incarnation, user_id=holder.pk, db_claimed=9,
        db_user=5, **WINDOW,
    )  # fmt: skip

    out = StringIO()
    call_command("rebuild_coupon_counters", stdout=out)

    assert redis_counts(first.pk, holder.pk) == [2, None]
    assert redis_counts(second.pk, holder.pk) == [0, None]
    assert out.getvalue().splitlines() == [
        f"[1/2] template {first.pk}: claimed 2",
        f"[2/2] template {second.pk}: claimed 0",
        "Rebuilt counters for 2 template(s).",
    ]


def test_rebuild_one_template_leaves_the_others_alone():
    first, second = CouponTemplateFactory(), CouponTemplateFactory()
    counter = coupon_counter()
    for template in (first, second):
        counter.record(
            template_id=template.pk, incarnation=template.incarnation, user_id=1,
            db_claimed=7, db_user=1, **WINDOW,
        )  # fmt: skip

    call_command("rebuild_coupon_counters", "--template", str(first.pk), stdout=StringIO())

    assert redis_counts(first.pk, 1) == [0, None]
    assert redis_counts(second.pk, 1) == [7, 1]


def test_rebuild_of_an_unknown_template_fails_clearly():
    with pytest.raises(CommandError, match="template 999999"):
        call_command("rebuild_coupon_counters", "--template", "999999", stdout=StringIO())


def test_rebuild_without_redis_fails_clearly(redis_namespace):
    CouponTemplateFactory()
    use_counter_at("redis://127.0.0.1:1/0", prefix=redis_namespace)  # nothing listens there
    with pytest.raises(CommandError, match="Redis is unavailable"):
        call_command("rebuild_coupon_counters", stdout=StringIO())
