"""Migration 0009 (decision 0600): pausing needed "change" before it; whoever held "change",
through a group or alone, can still pause and resume afterwards."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support.factories import UserFactory


@pytest.mark.django_db(transaction=True)
def test_whoever_could_change_templates_keeps_pause_and_resume():
    # given: the schema before 0009; an editor by group, one alone, and a viewer
    executor = MigrationExecutor(connection)
    executor.migrate([("coupons", "0008_published_terms_version")])
    change = Permission.objects.get(codename="change_coupontemplate")
    view = Permission.objects.get(codename="view_coupontemplate")
    Permission.objects.filter(codename="pause_coupons").delete()  # as before 0009
    editors = Group.objects.create(name="editors")
    editors.permissions.add(change)
    by_group, alone, viewer = UserFactory(is_staff=True), UserFactory(), UserFactory()
    by_group.groups.add(editors)
    alone.user_permissions.add(change)
    viewer.user_permissions.add(view)

    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    # then
    pause = Permission.objects.get(codename="pause_coupons")
    assert list(editors.permissions.filter(pk=pause.pk)) == [pause]
    assert list(alone.user_permissions.filter(pk=pause.pk)) == [pause]
    assert not viewer.user_permissions.filter(pk=pause.pk).exists()
    assert pause.name == "Can pause and resume coupons"
