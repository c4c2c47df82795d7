"""Issue 21: single-use codes never outnumber the template's remaining total (total - claimed -
unused codes), and creating many holds no lock that claims, grants or pauses wait for: the
codes are inserted in short transactions of their own, creations of one template one at a
time under a named lock (decision 0610)."""

import threading

import pytest
from django.db import connections

from backoffice.staff_actions import StaffAction, staff_audit
from coupons.errors import TemplateInvalid
from coupons.models import UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes, grants, templates
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url

LARGE = 3 * codes.CODES_PER_INSERT


def create_codes(client, template_id, count):
    return client.post(f"/api/admin/coupons/{template_id}/codes", {"count": count}, format="json")


def unused_codes(template) -> int:
    return SingleUseCode.objects.filter(template=template, used_at__isnull=True).count()


@pytest.mark.django_db
def test_codes_beyond_the_remaining_total_are_a_400_naming_count(staff_client):
    template = CouponTemplateFactory(total=10)
    for _ in range(3):
        UserCouponFactory(template=template)
    assert create_codes(staff_client, template.pk, 5).status_code == 201

    too_many = create_codes(staff_client, template.pk, 3)  # 10 - 3 claimed - 5 unused = 2
    enough = create_codes(staff_client, template.pk, 2)

    assert too_many.status_code == 400
    assert list(too_many.json()["fields"]) == ["count"]
    assert "2" in too_many.json()["fields"]["count"][0]
    # the request is what is wrong, not the template (it said "优惠券模板无效")
    assert too_many.json()["detail"] == "Invalid input."
    assert enough.status_code == 201
    assert unused_codes(template) == 7


@pytest.mark.django_db(transaction=True)
def test_a_failed_creation_leaves_no_codes_behind(monkeypatch):
    template = CouponTemplateFactory(total=LARGE)

    def fail(**kwargs):
        raise RuntimeError("the database went away at the end")

    monkeypatch.setattr(codes, "_codes_created", fail)

    with pytest.raises(RuntimeError):
        codes.single_use_codes_create(template_id=template.pk, count=LARGE)
    assert SingleUseCode.objects.count() == 0


def lock_wait_timeout(seconds: int) -> None:
    for session in connections.all():  # this thread's connections, the decision's too
        with session.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = %s", [seconds])


@pytest.mark.django_db(transaction=True)
def test_claims_grants_and_pauses_do_not_wait_for_a_large_creation(monkeypatch, settings):
    template = CouponTemplateFactory(total=2 * LARGE)
    staff = UserFactory(is_staff=True, is_superuser=True)
    first_batch, done = threading.Event(), threading.Event()
    real_insert = codes._insert_batch

    def insert_then_hold(**kwargs):  # the creation goes on only once the others are through
        inserted = real_insert(**kwargs)
        if not first_batch.is_set():
            first_batch.set()
            done.wait(timeout=20)
        return inserted

    monkeypatch.setattr(codes, "_insert_batch", insert_then_hold)
    creation = threading.Thread(
        target=lambda: run_together(
            [lambda: codes.single_use_codes_create(template_id=template.pk, count=LARGE)]
        )
    )
    creation.start()
    assert first_batch.wait(timeout=20)
    lock_wait_timeout(1)  # a wait on the template's row would fail after 1 s
    try:
        claim = bearer_client(UserFactory()).post(claim_url(template))
        granted = grants.coupon_grant(
            template_id=template.pk,
            user_ids=[UserFactory().pk],
            reason="mid-creation",
            granted_by_id=staff.pk,
            audit=staff_audit(staff, StaffAction.COUPONS_GRANT),
        )
        paused = templates.coupon_template_pause(
            template_id=template.pk, audit=staff_audit(staff, StaffAction.TEMPLATE_PAUSE)
        )
    finally:
        done.set()
        lock_wait_timeout(settings.DATABASE_LOCK_WAIT_TIMEOUT)
        creation.join(timeout=60)

    assert claim.status_code == 201, claim.json()
    assert len(granted.granted) == 1
    assert paused.paused_at is not None
    assert UserCoupon.objects.filter(template=template).count() == 2
    assert unused_codes(template) == LARGE


@pytest.mark.django_db(transaction=True)
def test_two_creations_at_once_both_finish_and_never_pass_the_total():
    fits = CouponTemplateFactory(total=2 * LARGE)
    tight = CouponTemplateFactory(total=LARGE + LARGE // 2)

    def create(template):
        def run():
            try:
                return codes.single_use_codes_create(template_id=template.pk, count=LARGE)
            except TemplateInvalid as error:
                return list(error.fields)

        return run

    both = run_together([create(fits), create(fits)])
    one = run_together([create(tight), create(tight)])

    assert both == [LARGE, LARGE]
    assert unused_codes(fits) == 2 * LARGE
    assert sorted(one, key=str) == [LARGE, ["count"]]
    assert unused_codes(tight) == LARGE <= tight.total


@pytest.mark.django_db
def test_the_total_cannot_drop_below_the_claimed_and_the_unused_codes(staff_client):
    template = CouponTemplateFactory(total=10)
    codes.single_use_codes_create(template_id=template.pk, count=6)
    UserCouponFactory(template=template)  # a grant, say
    url = f"/api/admin/coupons/{template.pk}"

    below = staff_client.patch(url, {"total": 6}, format="json")
    at = staff_client.patch(url, {"total": 7}, format="json")

    assert below.status_code == 400
    assert list(below.json()["fields"]) == ["total"]
    assert at.status_code == 200, at.json()
