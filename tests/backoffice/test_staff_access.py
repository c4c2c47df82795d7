"""Managing staff access is its own permission (accounts.manage_staff, SPEC section 23):
"Can change user" or "Can change group" alone neither make a staff member superuser nor give a
group more; staff accounts and groups are changed only with it, is_superuser by superusers
only, and every change of access is in the audit trail."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, Permission

from backoffice.staff_actions import StaffAction, recorded_action
from tests.support.admin_users import staff_with
from tests.support.factories import UserFactory

USERS = "/admin/auth/user/"
GROUPS = "/admin/auth/group/"
CHANGE_USERS = ("auth.view_user", "auth.change_user")


def change_form_post(client, url: str, **changes):
    """Post the admin change form at `url` back as shown, with `changes` applied."""
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if hasattr(value, "all"):
            value = [item.pk for item in value.all()]
        if isinstance(value, list):
            value = [getattr(item, "pk", item) for item in value]
        data[name] = value
    for name in ("last_login", "date_joined"):
        if data.get(name):
            data[f"{name}_0"], data[f"{name}_1"] = (
                data[name].strftime("%Y-%m-%d"),
                data[name].strftime("%H:%M:%S"),
            )
        data.pop(name, None)
    data = {name: value for name, value in data.items() if value not in (None, False, [])}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        for name in management.fields:
            data[f"{management.prefix}-{name}"] = management[name].value()
    for name, value in changes.items():
        if value is False:
            data.pop(name, None)
        else:
            data[name] = value
    return client.post(url, data)


@pytest.mark.django_db
def test_change_user_alone_cannot_touch_a_staff_account_nor_grant_staff_access(client):
    clerk = staff_with(*CHANGE_USERS)
    shopper = UserFactory()
    client.force_login(clerk)

    own_page = client.get(f"{USERS}{clerk.pk}/change/")
    saved = change_form_post(
        client, f"{USERS}{shopper.pk}/change/", is_staff="on", is_superuser="on", first_name="Li"
    )

    # the clerk's own account is read-only to it; a shopper's name changes, its access not
    assert "is_superuser" not in own_page.context["adminform"].form.fields
    assert saved.status_code == 302
    shopper.refresh_from_db()
    clerk.refresh_from_db()
    assert shopper.first_name == "Li"
    assert (shopper.is_staff, shopper.is_superuser) == (False, False)
    assert clerk.is_superuser is False
    assert client.post(f"{USERS}{clerk.pk}/password/", {}).status_code == 403


@pytest.mark.django_db
def test_change_group_alone_cannot_give_a_group_more(client):
    clerk = staff_with("auth.view_group", "auth.change_group", "auth.add_group")
    group = Group.objects.create(name="客服")
    clerk.groups.add(group)
    client.force_login(clerk)

    assert client.get(f"{GROUPS}{group.pk}/change/").context["has_change_permission"] is False
    assert client.post(f"{GROUPS}{group.pk}/change/", {"name": "客服"}).status_code == 403
    assert client.get(f"{GROUPS}add/").status_code == 403


@pytest.mark.django_db
def test_with_manage_staff_access_changes_are_made_and_audited_superuser_stays_a_superusers(
    client,
):
    manager = staff_with(*CHANGE_USERS, "accounts.manage_staff")
    shopper = UserFactory()
    support = Group.objects.create(name="support")
    refund = Permission.objects.get(codename="refund_order")
    client.force_login(manager)

    saved = change_form_post(
        client,
        f"{USERS}{shopper.pk}/change/",
        is_staff="on",
        is_superuser="on",
        groups=[support.pk],
        user_permissions=[refund.pk],
    )

    assert saved.status_code == 302
    shopper.refresh_from_db()
    assert (shopper.is_staff, shopper.is_superuser) == (True, False)  # superuser: not its call
    assert list(shopper.groups.all()) == [support]
    entries = [recorded_action(entry) for entry in LogEntry.objects.filter(user=manager)]
    recorded = [amounts for action, amounts in filter(None, entries)]
    assert [action for action, _ in filter(None, entries)] == [StaffAction.STAFF_MANAGE]
    assert recorded[0] == {
        "is_staff": [False, True],
        "groups": [[], ["support"]],
        "user_permissions": [[], ["refund_order"]],
    }
    # The user's history words it as the log page does (it showed the raw JSON), in Chinese
    history = client.get(f"{USERS}{shopper.pk}/history/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    page = history.content.decode()
    assert history.status_code == 200
    assert "staff_action" not in page and "False" not in page and "True" not in page
    assert "否" in page and "是" in page


@pytest.mark.django_db
def test_a_superuser_makes_a_superuser_and_it_is_audited(client):
    root = UserFactory(is_staff=True, is_superuser=True)
    staff = UserFactory(is_staff=True)
    client.force_login(root)

    saved = change_form_post(client, f"{USERS}{staff.pk}/change/", is_superuser="on")

    assert saved.status_code == 302
    staff.refresh_from_db()
    assert staff.is_superuser is True
    entries = [recorded_action(entry) for entry in LogEntry.objects.filter(user=root)]
    assert [entry for entry in entries if entry] == [
        (StaffAction.STAFF_MANAGE, {"is_superuser": [False, True]})
    ]


@pytest.mark.django_db
def test_manage_staff_alone_cannot_take_over_a_superuser_nor_raise_itself(client):
    manager = staff_with(*CHANGE_USERS, "auth.delete_user", "accounts.manage_staff")
    root = UserFactory(is_staff=True, is_superuser=True)
    demoted = UserFactory(is_staff=False)
    demoted.groups.add(Group.objects.create(name="old team"))
    clerk = staff_with(*CHANGE_USERS, "auth.delete_user")
    client.force_login(manager)

    password = client.post(
        f"{USERS}{root.pk}/password/", {"password1": "x-Long-pass-1", "password2": "x-Long-pass-1"}
    )
    deleted = client.post(f"{USERS}{root.pk}/delete/", {"post": "yes"})
    own = client.get(f"{USERS}{manager.pk}/change/").context["adminform"].form.fields
    client.force_login(clerk)
    demoted_password = client.post(f"{USERS}{demoted.pk}/password/", {})

    assert password.status_code == deleted.status_code == 403
    root.refresh_from_db()
    assert root.check_password("x-Long-pass-1") is False
    assert not (set(own) & {"is_staff", "is_superuser", "groups", "user_permissions"})
    # an account that lost is_staff but kept a group is still staff access to a clerk
    assert demoted_password.status_code == 403


@pytest.mark.django_db
def test_nobody_changes_their_own_access_through_a_group_they_belong_to(client):
    """A holder of manage_staff added grant and refund to its own group (302), then granted
    itself a coupon: its own group is read-only to it now, as its own account is."""
    ops = Group.objects.create(name="rt6-ops")
    ops.permissions.set(
        Permission.objects.filter(
            content_type__app_label="auth", codename__in=["view_group", "change_group"]
        )
    )
    manager = staff_with("accounts.manage_staff", "auth.delete_group")
    manager.groups.add(ops)
    other_team = Group.objects.create(name="rt6-support")
    grant = Permission.objects.get(codename="grant_coupons")
    client.force_login(manager)

    own = change_form_post(client, f"{GROUPS}{ops.pk}/change/", permissions=[grant.pk])
    deleted = client.post(f"{GROUPS}{ops.pk}/delete/", {"post": "yes"})
    other = change_form_post(client, f"{GROUPS}{other_team.pk}/change/", permissions=[grant.pk])

    assert own.status_code == 403
    assert deleted.status_code == 403
    assert not ops.permissions.filter(codename="grant_coupons").exists()
    assert Group.objects.filter(pk=ops.pk).exists()
    assert other.status_code == 302  # another team's group is still theirs to manage
    assert other_team.permissions.filter(pk=grant.pk).exists()
    assert not manager.has_perm("coupons.grant_coupons")
