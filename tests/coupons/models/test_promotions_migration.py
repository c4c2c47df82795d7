"""Migration 0007 (SPEC section 18) keeps every template and coupon: existing templates are not
paused, for everyone, without single-use codes."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core import clock
from coupons.models import CouponTemplate, UserCoupon
from tests.support.factories import UserFactory


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_templates_and_coupons_and_sets_the_defaults():
    # given: the schema before the promotions, with a template and a coupon
    executor = MigrationExecutor(connection)
    before = executor.migrate([("coupons", "0006_admin_permissions_and_labels")])
    Template = before.apps.get_model("coupons", "CouponTemplate")
    Coupon = before.apps.get_model("coupons", "UserCoupon")
    now = clock.now()
    template = Template.objects.create(
        name="Before promotions",
        type="direct",
        value=500,
        total=10,
        valid_from=now - timedelta(days=1),
        valid_until=now + timedelta(days=1),
        claimed_count=1,
    )
    user = UserFactory()
    Coupon.objects.create(
        template_id=template.pk,
        user_id=user.pk,
        slot=1,
        valid_from=template.valid_from,
        valid_until=template.valid_until,
    )

    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    # then
    migrated = CouponTemplate.objects.get(pk=template.pk)
    assert (migrated.name, migrated.claimed_count) == ("Before promotions", 1)
    assert (migrated.paused_at, migrated.audience, migrated.has_single_use_codes) == (
        None,
        "all",
        False,
    )
    assert list(UserCoupon.objects.values_list("template_id", "user_id")) == [
        (template.pk, user.pk)
    ]
