"""Every admin action, button and custom page checks a permission (SPEC section 17): granting
needs coupons.grant_coupons, exporting coupons.export_coupons."""

import pytest
from django.contrib.admin.models import LogEntry

from coupons.models import UserCoupon
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.staff_jobs import records_csv

pytestmark = pytest.mark.django_db

LIST_URL = "/admin/coupons/coupontemplate/"
USERS_URL = "/admin/auth/user/"


def logged_in(client, user):
    client.force_login(user)
    return client


def grant_posts(template, grantee):
    """Every way the admin can grant: the template list action, the template page's grant
    URL, and the user list action."""
    return [
        (
            LIST_URL,
            {
                "action": "grant_to_users",
                "_selected_action": [template.pk],
                "apply": "1",
                "users": grantee.username,
                "reason": "sneaky",
            },
        ),
        (
            f"{LIST_URL}{template.pk}/grant/",
            {"users": grantee.username, "reason": "sneaky", "apply": "1"},
        ),
        (
            USERS_URL,
            {
                "action": "grant_coupon_to_users",
                "_selected_action": [grantee.pk],
                "apply": "1",
                "template": template.pk,
                "reason": "sneaky",
            },
        ),
    ]


def test_a_view_only_staff_member_sees_no_grant_or_export_and_issues_nothing(client):
    viewer = staff_with(*VIEW_ONLY)
    template = CouponTemplateFactory()
    grantee = UserFactory(username="grantee")
    logged_in(client, viewer)

    template_list = client.get(LIST_URL).content.decode()
    users_list = client.get(USERS_URL).content.decode()
    page = client.get(f"{LIST_URL}{template.pk}/change/").content.decode()
    answers = [client.post(url, data).status_code for url, data in grant_posts(template, grantee)]
    grant_page = client.get(f"{LIST_URL}{template.pk}/grant/")
    export = client.post(f"{LIST_URL}{template.pk}/records/export/")

    assert 'data-name="grant_to_users"' not in template_list
    assert 'data-name="grant_coupon_to_users"' not in users_list
    assert "grant-to-users" not in page and "export-csv" not in page
    # The actions are unknown to them (the list again, "No action selected."); the page is 403.
    assert answers == [200, 403, 200]
    assert grant_page.status_code == 403
    assert export.status_code == 403
    assert not UserCoupon.objects.exists()
    assert not LogEntry.objects.exists()


def test_the_grant_permission_alone_grants_from_every_place(client):
    granter = staff_with(*VIEW_ONLY, "coupons.grant_coupons")
    template = CouponTemplateFactory(total=10, per_user_limit=3)
    grantee = UserFactory(username="grantee")
    logged_in(client, granter)

    template_list = client.get(LIST_URL).content.decode()
    page = client.get(f"{LIST_URL}{template.pk}/change/").content.decode()
    for index, (url, data) in enumerate(grant_posts(template, grantee)):
        response = client.post(url, data | {"reason": f"reason {index}"})
        assert response.status_code == 302, url

    assert 'data-name="grant_to_users"' in template_list
    assert "grant-to-users" in page and "export-csv" not in page
    granted = UserCoupon.objects.filter(user=grantee).order_by("pk")
    assert [(c.source, c.granted_by_id, c.grant_reason) for c in granted] == [
        ("grant", granter.pk, "reason 0"),
        ("grant", granter.pk, "reason 1"),
        ("grant", granter.pk, "reason 2"),
    ]
    assert LogEntry.objects.filter(object_id=str(template.pk), user=granter).count() == 3


def test_the_export_permission_alone_exports(client):
    exporter = staff_with(*VIEW_ONLY, "coupons.export_coupons")
    template = CouponTemplateFactory()
    UserCouponFactory(template=template)
    logged_in(client, exporter)

    page = client.get(f"{LIST_URL}{template.pk}/change/").content.decode()
    export = records_csv(client, template.pk)

    assert "export-csv" in page and "grant-to-users" not in page
    assert len(export.splitlines()) == 2


def test_the_permissions_are_listed_in_the_admin_s_language(admin_site):
    page = admin_site.get("/admin/auth/group/add/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "优惠券 | 优惠券模板 | 可发放优惠券" in page
    assert "优惠券 | 优惠券模板 | 可导出优惠券" in page
    assert "Can grant coupons" not in page
    assert "token generation" not in page  # accounts' plumbing, as token_blacklist's
    assert "token" not in page.lower().split("<select", 1)[1].split("</select>", 1)[0]


def test_the_token_blacklist_is_not_in_the_operator_s_admin(admin_site):
    index = admin_site.get("/admin/").content.decode()

    assert "token_blacklist" not in index
    assert admin_site.get("/admin/token_blacklist/outstandingtoken/").status_code == 404
