"""Redis facts cannot outlive their template (SPEC section 21; decision 0721): a template id
that a restored database hands out again starts with no counts, the scheduled reconcile lowers
counts Redis holds above the database's (never raising one), and the rebuild covers every
template id Redis knows, the database's and the others."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core import clock
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.reconcile import coupon_counters_reconcile
from coupons.models import CouponTemplate, UserCoupon
from tests.support.claims import claim
from tests.support.claims import publish as published
from tests.support.factories import UserFactory
from tests.support.helpers import redis_counts

pytestmark = pytest.mark.django_db(transaction=True)


def publish(**terms) -> CouponTemplate:
    """A template of two coupons, published through the service."""
    return published(**({"total": 2} | terms))


def restore_from_before(template: CouponTemplate) -> None:
    """What a restore from a backup taken before `template` existed leaves: no row, no
    coupons, and the table's next id the template's again. Redis is not told."""
    UserCoupon.objects.filter(template=template).delete()
    CouponTemplate.objects.filter(pk=template.pk).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE coupon_templates AUTO_INCREMENT = {template.pk}")


def test_a_template_id_reused_after_a_restore_starts_with_no_counts():
    lost = publish(total=2)
    holders = UserFactory.create_batch(2)
    assert [claim(user, lost)[0] for user in holders] == [201, 201]
    assert claim(UserFactory(), lost) == (409, "sold_out")  # Redis holds claimed = 2

    restore_from_before(lost)
    reborn = publish(total=2)

    assert reborn.pk == lost.pk and reborn.incarnation != lost.incarnation
    assert redis_counts(reborn.pk, holders[0].pk) == [None, None]
    assert claim(holders[0], reborn)[0] == 201  # neither sold out nor over its limit
    assert claim(UserFactory(), reborn)[0] == 201
    assert claim(UserFactory(), reborn) == (409, "sold_out")


def test_the_migration_gives_each_existing_template_its_own_incarnation():
    executor = MigrationExecutor(connection)
    before = executor.migrate([("coupons", "0009_staff_permissions_and_audit")])
    Template = before.apps.get_model("coupons", "CouponTemplate")
    now = clock.now()
    ids = [
        Template.objects.create(
            name=f"Before incarnations {n}", type="direct", value=500, total=10,
            valid_from=now - timedelta(days=1), valid_until=now + timedelta(days=1),
        ).pk
        for n in range(2)
    ]  # fmt: skip

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    incarnations = list(
        CouponTemplate.objects.filter(pk__in=ids).values_list("incarnation", flat=True)
    )
    assert len(set(incarnations)) == 2 and all(len(i) == 16 for i in incarnations)
    assert publish().incarnation not in incarnations


def roll_back_claims(template: CouponTemplate, keep: int) -> None:
    """The database as an older backup had it: only the first `keep` coupons."""
    for coupon in UserCoupon.objects.filter(template=template).order_by("-pk")[
        : template.claimed_count - keep
    ]:
        coupon.delete()
    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=keep)


def test_the_reconcile_lowers_counts_redis_holds_above_the_database():
    template = publish(total=2, per_user_limit=2)
    holder, other = UserFactory.create_batch(2)
    assert [claim(holder, template)[0] for _ in range(2)] == [201, 201]
    template.refresh_from_db()
    roll_back_claims(template, keep=1)
    assert claim(other, template) == (409, "sold_out")  # Redis still holds 2 of 2
    assert redis_counts(template.pk, holder.pk) == [2, 2]

    line = coupon_counters_reconcile()

    assert redis_counts(template.pk, holder.pk) == [1, 1]
    assert "2 lowered" in line
    assert claim(other, template)[0] == 201
    assert claim(holder, template) == (409, "sold_out")


def test_the_reconcile_never_raises_a_count_and_leaves_templates_out_of_their_window():
    template, ended = publish(total=5), publish(total=5)
    user = UserFactory()
    assert claim(user, template)[0] == 201
    assert claim(user, ended)[0] == 201
    counter = coupon_counter()
    # Redis below the database (a count it has not learnt yet): stays as it is.
    counter.client.set(counter.count_keys(template.pk, template.incarnation, 0)[0], 0)
    roll_back_claims(CouponTemplate.objects.get(pk=ended.pk), keep=0)
    past = clock.now() - timedelta(minutes=1)
    CouponTemplate.objects.filter(pk=ended.pk).update(
        valid_from=past - timedelta(hours=1), valid_until=past
    )

    coupon_counters_reconcile()

    assert redis_counts(template.pk, user.pk) == [0, 1]
    assert redis_counts(ended.pk, user.pk) == [1, 1]  # refused on its window anyway


def test_the_rebuild_drops_the_facts_of_template_ids_the_database_does_not_hold():
    kept, lost = publish(), publish()
    user = UserFactory()
    assert claim(user, kept)[0] == 201
    assert claim(user, lost)[0] == 201
    lost_counts = coupon_counter().count_keys(lost.pk, lost.incarnation, user.pk)
    restore_from_before(lost)

    out = StringIO()
    call_command("rebuild_coupon_counters", stdout=out)

    assert f"template {lost.pk}: not in the database, dropped" in out.getvalue()
    counter = coupon_counter()
    assert counter.client.exists(*lost_counts) == 0
    assert counter.stored_terms(template_id=lost.pk) is None
    assert redis_counts(kept.pk, user.pk) == [1, None]


def test_the_rebuild_drops_the_counts_of_other_incarnations_and_expires_its_own():
    template = publish()
    user = UserFactory()
    assert claim(user, template)[0] == 201
    counter = coupon_counter()
    stale = counter.count_keys(template.pk, "0123456789abcdef", user.pk)
    counter.client.set(stale[0], 99)
    counter.client.set(stale[1], 9)

    call_command("rebuild_coupon_counters", "--template", str(template.pk), stdout=StringIO())

    assert counter.client.exists(*stale) == 0
    claimed = counter.count_keys(template.pk, template.incarnation, 0)[0]
    assert 0 < counter.client.pttl(claimed) <= 2 * 3600 * 1000
    assert redis_counts(template.pk, user.pk) == [1, None]


@pytest.mark.servers
def test_the_reconcile_with_redis_down_fails_for_the_scheduler_to_log(own_redis):
    publish()
    own_redis.stop()

    from coupons.issuing.counter import REDIS_FAILURES

    with pytest.raises(REDIS_FAILURES):
        coupon_counters_reconcile()
