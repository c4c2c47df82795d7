"""Exports and grants (SPEC section 19): CSV cells a spreadsheet would run are escaped, grants
skip inactive users, and grant reasons compare after trimming, NFKC and case folding."""

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core import clock
from coupons.grant_reasons import reason_key
from coupons.models import UserCoupon
from coupons.services import grants
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.staff_jobs import records_csv


def grants_url(template) -> str:
    return f"/api/admin/coupons/{template.pk}/grants"


@pytest.mark.django_db
def test_the_coupon_export_escapes_cells_a_spreadsheet_would_run(admin_site):
    # given: usernames that Excel or LibreOffice would read as formulas (the ORM does not run
    # the username validator, an import or another app might not either)
    template = CouponTemplateFactory()
    names = ['=HYPERLINK("http://x")', "+1+2", "-3+4", "@SUM(A1)", "\tpadded", "plain-name"]
    for name in names:
        UserCouponFactory(template=template, user=UserFactory(username=name))

    # when
    body = records_csv(admin_site, template.pk)

    # then
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    username = rows[0].index("username")
    assert [row[username] for row in rows[1:]] == [
        '\'=HYPERLINK("http://x")',
        "'+1+2",
        "'-3+4",
        "'@SUM(A1)",
        "'\tpadded",
        "plain-name",
    ]


@pytest.mark.django_db
def test_the_coupon_export_escapes_the_template_name_grant_reason_and_granter(admin_site):
    # given: a grant whose template, reason and granting staff member read as formulas
    template = CouponTemplateFactory(name="=cmd|' /C calc'!A0")
    granter = UserFactory(username="@granter", is_staff=True)
    grants.coupon_grant(
        template_id=template.pk,
        user_ids=[UserFactory().pk],
        reason="+compensation",
        granted_by_id=granter.pk,
    )

    # when
    body = records_csv(admin_site, template.pk)

    # then
    header, row = csv.reader(io.StringIO(body.decode("utf-8-sig")))
    cells = dict(zip(header, row, strict=True))
    assert (cells["template"], cells["grant reason"], cells["granted by"]) == (
        "'=cmd|' /C calc'!A0",
        "'+compensation",
        "'@granter",
    )


@pytest.mark.django_db
def test_a_grant_skips_inactive_users_as_unknown(staff_client):
    template = CouponTemplateFactory(total=10)
    active, inactive = UserFactory(), UserFactory(is_active=False)

    response = staff_client.post(
        grants_url(template), {"user_ids": [inactive.pk, active.pk], "reason": "r"}, format="json"
    )

    assert response.status_code == 200
    assert (response.json()["granted"], response.json()["unknown_user"]) == (
        [active.pk],
        [inactive.pk],
    )
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [active.pk]


@pytest.mark.django_db
def test_grant_reasons_that_differ_only_in_case_width_or_spaces_are_one_reason(staff_client):
    # given: granted once for "Ⱥpology, late delivery"
    template = CouponTemplateFactory(total=10, per_user_limit=5)
    user = UserFactory()
    first = staff_client.post(
        grants_url(template),
        {"user_ids": [user.pk], "reason": "Ⱥpology, late delivery"},
        format="json",
    )

    # when: the same reason, spelt otherwise: lower case (U+2C65, which MariaDB's
    # utf8mb4_unicode_ci collation, UCA 4.0, does not fold), full-width letters, an
    # ideographic space and trailing spaces
    again = [
        staff_client.post(
            grants_url(template), {"user_ids": [user.pk], "reason": reason}, format="json"
        ).json()
        for reason in (
            "ⱥpology, late delivery",
            "\u3000ȺPOLOGY, ＬＡＴＥ delivery  ",
        )
    ]

    # then: nothing issued twice; the reason is kept as first typed
    assert first.json()["granted"] == [user.pk]
    assert [answer["already_granted"] for answer in again] == [[user.pk], [user.pk]]
    coupon = UserCoupon.objects.get(user=user)
    assert coupon.grant_reason == "Ⱥpology, late delivery"
    assert coupon.grant_reason_key == reason_key("ⱥpology, late delivery")


@pytest.mark.django_db(transaction=True)
def test_the_migration_keys_stored_reasons_and_keeps_every_coupon():
    # given: the schema before the key, with two grants to one user whose reasons were
    # different then and are one reason now
    executor = MigrationExecutor(connection)
    before = executor.migrate([("coupons", "0004_verbose_names")])
    # The template as the schema then had it (today's model names columns added since).
    template = before.apps.get_model("coupons", "CouponTemplate").objects.create(
        name="Before the key",
        type="direct",
        value=500,
        total=10,
        per_user_limit=5,
        valid_from=clock.now() - timedelta(days=1),
        valid_until=clock.now() + timedelta(days=1),
    )
    user = UserFactory()
    with connection.cursor() as cursor:
        for slot, reason in ((1, "Ⱥpology"), (2, "ⱥpology"), (3, "Birthday")):
            cursor.execute(
                "INSERT INTO user_coupons (template_id, user_id, slot, status, valid_from,"
                " valid_until, source, grant_reason, created_at, updated_at)"
                " SELECT id, %s, %s, 'unused', valid_from, valid_until, 'grant', %s, NOW(),"
                " NOW() FROM coupon_templates WHERE id = %s",
                [user.pk, slot, reason, template.pk],
            )

    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    # then: every coupon and its reason text kept; the first of the pair holds the key
    rows = list(
        UserCoupon.objects.filter(user=user)
        .order_by("slot")
        .values_list("grant_reason", "grant_reason_key")
    )
    assert [reason for reason, _ in rows] == ["Ⱥpology", "ⱥpology", "Birthday"]
    assert rows[0][1] == reason_key("Ⱥpology")
    assert rows[1][1] not in (None, rows[0][1])
    assert rows[2][1] == reason_key("birthday")
