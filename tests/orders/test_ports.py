"""coupons.ports: the contracts the orders app relies on."""

import dataclasses
from datetime import timedelta

import pytest
from django.db import transaction

from coupons import ports
from coupons.errors import CouponExpired, CouponNotFound, CouponRollbackFailed, CouponUsed
from coupons.models import UserCoupon
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_get_usable_returns_a_frozen_summary_of_the_coupon(now):
    template = CouponTemplateFactory(type="threshold", value=5000, min_amount=20000)
    coupon = UserCouponFactory(template=template)

    usable = ports.get_usable(user_id=coupon.user_id, coupon_id=coupon.pk)

    assert usable == ports.UsableCoupon(
        coupon_id=coupon.pk,
        template_id=template.pk,
        name=template.name,
        type="threshold",
        value=5000,
        min_amount=20000,
        max_discount=None,
        scope="all",
        scope_ids=(),
        valid_from=now - timedelta(days=1),
        valid_until=now + timedelta(days=1),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        usable.value = 1


def test_get_usable_refuses_another_users_or_a_missing_coupon(now):
    coupon = UserCouponFactory()
    stranger = UserFactory()

    with pytest.raises(CouponNotFound):
        ports.get_usable(user_id=stranger.pk, coupon_id=coupon.pk)
    with pytest.raises(CouponNotFound):
        ports.get_usable(user_id=coupon.user_id, coupon_id=coupon.pk + 1000)


def test_get_usable_refuses_a_used_coupon(now):
    coupon = UserCouponFactory(status="used", used_at=now)
    with pytest.raises(CouponUsed):
        ports.get_usable(user_id=coupon.user_id, coupon_id=coupon.pk)


@pytest.mark.parametrize(
    ("starts_in", "ends_in", "usable"),
    [
        (timedelta(seconds=1), timedelta(days=1), False),  # not started yet
        (timedelta(days=-2), timedelta(seconds=-1), False),  # ended
        (timedelta(0), timedelta(days=1), True),  # first instant: both ends inclusive
        (timedelta(days=-1), timedelta(0), True),  # last instant
    ],
)
def test_get_usable_checks_the_window_inclusively(now, starts_in, ends_in, usable):
    template = CouponTemplateFactory(valid_from=now + starts_in, valid_until=now + ends_in)
    coupon = UserCouponFactory(template=template)

    if usable:
        assert ports.get_usable(user_id=coupon.user_id, coupon_id=coupon.pk).coupon_id == coupon.pk
    else:
        with pytest.raises(CouponExpired):
            ports.get_usable(user_id=coupon.user_id, coupon_id=coupon.pk)


def test_use_coupon_marks_it_used_once(now):
    coupon = UserCouponFactory()

    with transaction.atomic():
        used = ports.use_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)

    assert used.coupon_id == coupon.pk
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("used", now)
    with pytest.raises(CouponUsed), transaction.atomic():
        ports.use_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("used", now)


@pytest.mark.parametrize(
    ("case", "error"),
    [("not_started", CouponExpired), ("ended", CouponExpired), ("stranger", CouponNotFound)],
)
def test_use_coupon_refuses_and_changes_nothing(now, case, error):
    windows = {
        "not_started": (now + timedelta(hours=1), now + timedelta(days=1)),
        "ended": (now - timedelta(days=1), now - timedelta(hours=1)),
        "stranger": (now - timedelta(days=1), now + timedelta(days=1)),
    }
    valid_from, valid_until = windows[case]
    coupon = UserCouponFactory(
        template=CouponTemplateFactory(valid_from=valid_from, valid_until=valid_until)
    )
    user_id = UserFactory().pk if case == "stranger" else coupon.user_id

    with pytest.raises(error), transaction.atomic():
        ports.use_coupon(user_id=user_id, coupon_id=coupon.pk)

    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("unused", None)


def test_rollback_coupon_returns_a_used_coupon_and_refuses_an_unused_one(now):
    coupon = UserCouponFactory(status="used", used_at=now)

    with transaction.atomic():
        ports.rollback_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)

    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("unused", None)
    with pytest.raises(CouponRollbackFailed), transaction.atomic():
        ports.rollback_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)
    with pytest.raises(CouponRollbackFailed), transaction.atomic():
        ports.rollback_coupon(user_id=UserFactory().pk, coupon_id=coupon.pk)


def test_list_unused_keeps_unused_unexpired_own_coupons_newest_first(now):
    user = UserFactory()
    older = UserCouponFactory(user=user)
    not_started = UserCouponFactory(
        user=user,
        template=CouponTemplateFactory(
            valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2)
        ),
    )
    UserCouponFactory(user=user, status="used", used_at=now)
    UserCouponFactory(
        user=user,
        template=CouponTemplateFactory(
            valid_from=now - timedelta(days=2), valid_until=now - timedelta(milliseconds=1)
        ),
    )
    UserCouponFactory()  # someone else's

    listed = ports.list_unused(user_id=user.pk)

    assert [coupon.coupon_id for coupon in listed] == [not_started.pk, older.pk]


@pytest.mark.django_db(transaction=True)
def test_writing_ports_refuse_to_run_outside_a_transaction(now):
    coupon = UserCouponFactory()
    used = UserCouponFactory(status="used", used_at=now)

    with pytest.raises(ports.TransactionRequired):
        ports.use_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)
    with pytest.raises(ports.TransactionRequired):
        ports.rollback_coupon(user_id=used.user_id, coupon_id=used.pk)

    assert list(UserCoupon.objects.order_by("pk").values_list("status", flat=True)) == [
        "unused",
        "used",
    ]


@pytest.mark.django_db(transaction=True)
def test_concurrent_use_coupon_has_exactly_one_winner(now):
    coupon = UserCouponFactory()
    threads_count = 12

    def use() -> str:
        try:
            with transaction.atomic():
                ports.use_coupon(user_id=coupon.user_id, coupon_id=coupon.pk)
            return "used"
        except CouponUsed:
            return "coupon_used"

    outcomes = run_together([use] * threads_count)

    assert sorted(outcomes) == ["coupon_used"] * (threads_count - 1) + ["used"]
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == ("used", now)
