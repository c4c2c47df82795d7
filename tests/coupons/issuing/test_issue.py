"""The issuing core (issuing.coupon_issue): the per-user limit held by the slot index and the
guarded UPDATE, whatever the limit is edited to and whenever."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from core import clock
from coupons.errors import ClaimLimitReached, ClaimNotInWindow, ClaimSoldOut
from coupons.issuing import service as issuing
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import templates
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url, redis_counts

WAITING_UPDATE = "UPDATE coupon_templates SET claimed_count%"


def slots(template, user) -> list[int]:
    return list(
        UserCoupon.objects.filter(template=template, user=user)
        .order_by("slot")
        .values_list("slot", flat=True)
    )


@pytest.mark.django_db
def test_a_limit_lowered_below_what_a_user_holds_refuses_and_raised_again_admits(user):
    template = CouponTemplateFactory(per_user_limit=3)
    for _ in range(3):
        issuing.coupon_claim(template_id=template.pk, user_id=user.pk)
    templates.coupon_template_edit(template_id=template.pk, changes={"per_user_limit": 2})

    with pytest.raises(ClaimLimitReached):
        issuing.coupon_claim(template_id=template.pk, user_id=user.pk)
    assert slots(template, user) == [1, 2, 3]

    templates.coupon_template_edit(template_id=template.pk, changes={"per_user_limit": 4})
    coupon = issuing.coupon_claim(template_id=template.pk, user_id=user.pk)

    assert coupon.slot == 4
    assert slots(template, user) == [1, 2, 3, 4]
    template.refresh_from_db()
    assert template.claimed_count == 4
    assert redis_counts(template.pk, user.pk) == [4, 4]


@pytest.mark.django_db
def test_an_issue_before_the_window_opens_passes_only_the_start(user, frozen_now):
    now = frozen_now.now()
    template = CouponTemplateFactory(
        valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2), total=1
    )

    with pytest.raises(ClaimNotInWindow):
        issuing.coupon_issue(template_id=template.pk, user_id=user.pk, source="claim")
    coupon = issuing.coupon_issue(
        template_id=template.pk, user_id=user.pk, before_window_opens=True, source="claim"
    )
    assert (coupon.template_id, coupon.user_id, coupon.slot) == (template.pk, user.pk, 1)
    with pytest.raises(ClaimSoldOut):  # total and limit still hold
        issuing.coupon_issue(
            template_id=template.pk,
            user_id=UserFactory().pk,
            before_window_opens=True,
            source="claim",
        )

    frozen_now(now + timedelta(days=2, milliseconds=1))
    CouponTemplate.objects.filter(pk=template.pk).update(total=5)
    with pytest.raises(ClaimNotInWindow):  # never after the end
        issuing.coupon_issue(
            template_id=template.pk,
            user_id=UserFactory().pk,
            before_window_opens=True,
            source="claim",
        )
    assert UserCoupon.objects.count() == 1


class RowHolder:
    """Holds the template's row lock in a thread of its own until released; `then` runs
    inside the holding transaction just before it commits."""

    def __init__(self, template_id: int, then=lambda: None):
        self.locked = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(template_id, then))
        self.thread.start()
        assert self.locked.wait(timeout=10)

    def _hold(self, template_id: int, then) -> None:
        try:
            with transaction.atomic():
                CouponTemplate.objects.select_for_update().get(pk=template_id)
                self.locked.set()
                self.release.wait(timeout=10)
                then()
        finally:
            connection.close()

    def release_once_waiting(self, waiting: int) -> bool:
        """Release once `waiting` claims are queued on the row (their guarded UPDATE runs)."""
        try:
            for _ in range(200):
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE %s",
                        [WAITING_UPDATE],
                    )
                    if cursor.fetchone()[0] >= waiting:
                        return True
                threading.Event().wait(0.05)
            return False
        finally:
            self.release.set()
            self.thread.join()


@pytest.mark.django_db(transaction=True)
def test_a_limit_lowered_while_a_claim_waits_for_the_row_is_honoured():
    """The claim read limit 2 and took slot 2; the guarded UPDATE sees the limit lowered to 1
    under the lock and refuses, with nothing written."""
    template = CouponTemplateFactory(per_user_limit=2)
    user = UserFactory()
    UserCouponFactory(template=template, user=user)
    holder = RowHolder(
        template.pk,
        then=lambda: CouponTemplate.objects.filter(pk=template.pk).update(per_user_limit=1),
    )
    answers = []
    claim = threading.Thread(
        target=lambda: (
            answers.append(bearer_client(user).post(claim_url(template))),
            connection.close(),
        )
    )
    claim.start()

    assert holder.release_once_waiting(1)
    claim.join()

    (response,) = answers
    assert (response.status_code, response.json()["code"]) == (409, "limit_reached")
    assert slots(template, user) == [1]
    template.refresh_from_db()
    assert (template.claimed_count, template.per_user_limit) == (1, 1)
    assert redis_counts(template.pk, user.pk) == [1, 1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("limit", "expected"), [(1, [201, 409]), (2, [201, 201])])
def test_two_claims_of_one_user_that_read_the_same_count_take_the_next_slot(limit, expected):
    """Both read "0 held" and try slot 1 behind the lock; the second meets the taken slot,
    rolls back its increment and tries slot 2, which the limit admits or refuses."""
    template = CouponTemplateFactory(per_user_limit=limit)
    user = UserFactory()
    holder = RowHolder(template.pk)
    answers = []

    def claim() -> None:
        try:
            answers.append(bearer_client(user).post(claim_url(template)))
        finally:
            connection.close()

    claims = [threading.Thread(target=claim) for _ in range(2)]
    for thread in claims:
        thread.start()
    assert holder.release_once_waiting(2)
    for thread in claims:
        thread.join()

    assert sorted(r.status_code for r in answers) == expected
    assert {r.json()["code"] for r in answers if r.status_code == 409} <= {"limit_reached"}
    assert slots(template, user) == list(range(1, limit + 1))
    template.refresh_from_db()
    assert template.claimed_count == limit
    assert redis_counts(template.pk, user.pk) == [limit, limit]


@pytest.mark.django_db(transaction=True)
def test_the_migration_numbers_existing_coupons_per_template_and_user_in_issue_order():
    executor = MigrationExecutor(connection)
    executor.migrate([("coupons", "0001_initial")])
    apps = executor.loader.project_state([("coupons", "0001_initial")]).apps
    Template = apps.get_model("coupons", "CouponTemplate")
    Coupon = apps.get_model("coupons", "UserCoupon")
    now = clock.now()
    first, second = (
        Template.objects.create(
            name=name,
            type="direct",
            value=100,
            total=10,
            per_user_limit=5,
            valid_from=now,
            valid_until=now + timedelta(days=1),
        )
        for name in ("first", "second")
    )
    alice, bob = UserFactory(), UserFactory()
    order = [(first, alice), (second, alice), (first, bob), (first, alice), (first, alice)]
    ids = [Coupon.objects.create(template_id=t.pk, user_id=u.pk).pk for t, u in order]

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert [UserCoupon.objects.get(pk=pk).slot for pk in ids] == [1, 1, 1, 2, 3]
