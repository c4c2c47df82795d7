"""Issue 21: a grant of a new-customers template to a user who has paid, or one paused during
the run, reports `not_eligible` / `paused` from every door (the admin answered 500 with a
KeyError after granting the others), and the run is recorded in the template's history."""

from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.utils import translation

from backoffice.audit_messages import GRANT_OUTCOMES
from backoffice.staff_actions import StaffAction, recorded_action, staff_audit
from coupons.models import UserCoupon
from coupons.services import grants, templates
from tests.support.factories import CouponTemplateFactory, PaidOrderFactory, UserFactory

pytestmark = pytest.mark.django_db

LIST_URL = "/admin/coupons/coupontemplate/"


def grant_runs(template) -> list[dict]:
    entries = LogEntry.objects.filter(object_id=str(template.pk)).order_by("pk")
    return [recorded[1] for entry in entries if (recorded := recorded_action(entry))]


def admin_grant(admin_site, template, users: str):
    return admin_site.post(
        f"{LIST_URL}{template.pk}/grant/",
        {"users": users, "reason": "welcome", "action": "grant_to_users", "apply": "1"},
    )


def test_the_admin_reports_users_who_have_paid_as_not_eligible(admin_site):
    template = CouponTemplateFactory(audience="new_customers")
    newcomer, payer = UserFactory(username="newcomer"), UserFactory(username="payer")
    PaidOrderFactory(user=payer)

    response = admin_grant(admin_site, template, "newcomer\npayer")

    assert response.status_code == 302
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert f"{GRANT_OUTCOMES['not_eligible']}: payer" in message
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [newcomer.pk]
    [run] = grant_runs(template)
    assert run["outcomes"] == {"granted": 1, "not_eligible": 1}


def test_the_admin_reports_users_left_when_the_template_was_paused_mid_run(
    admin_site, staff, monkeypatch
):
    template = CouponTemplateFactory(total=10)
    first = UserFactory(username="first")
    UserFactory(username="second")
    real_batch = grants._grant_batch

    def batch_then_pause(*args, **kwargs):  # a colleague pauses it after the first batch
        stopped = real_batch(*args, **kwargs)
        templates.coupon_template_pause(
            template_id=template.pk, audit=staff_audit(staff, StaffAction.TEMPLATE_PAUSE)
        )
        return stopped

    monkeypatch.setattr(grants, "GRANT_BATCH_SIZE", 1)
    monkeypatch.setattr(grants, "_grant_batch", batch_then_pause)

    response = admin_grant(admin_site, template, "first\nsecond")

    assert response.status_code == 302
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert f"{GRANT_OUTCOMES['paused']}: second" in message
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [first.pk]
    assert grant_runs(template)[-1]["outcomes"] == {"granted": 1, "paused": 1}


def test_every_grant_outcome_has_a_label_in_chinese():
    outcomes = set(grants.GrantResult.__dataclass_fields__)
    assert outcomes == set(GRANT_OUTCOMES)
    with translation.override("en"):
        english = {outcome: str(label) for outcome, label in GRANT_OUTCOMES.items()}
    with translation.override("zh-hans"):
        chinese = {outcome: str(label) for outcome, label in GRANT_OUTCOMES.items()}
    assert all(chinese[outcome] != english[outcome] for outcome in outcomes)


def test_the_grant_command_reports_not_eligible_and_records_the_run(tmp_path, staff):
    template = CouponTemplateFactory(audience="new_customers")
    newcomer, payer = UserFactory(), UserFactory()
    PaidOrderFactory(user=payer)
    users_file = tmp_path / "users.txt"
    users_file.write_text(f"{newcomer.pk}\n{payer.pk}\n")
    out = StringIO()

    call_command(
        "grant_coupons",
        str(template.pk),
        "--users-file",
        str(users_file),
        "--reason",
        "welcome",
        "--as",
        staff.username,
        stdout=out,
    )

    assert f"not_eligible: {payer.pk}" in out.getvalue()
    assert "granted 1" in out.getvalue() and "not_eligible 1" in out.getvalue()
    [run] = grant_runs(template)
    assert run["outcomes"] == {"granted": 1, "not_eligible": 1}


@pytest.mark.django_db(transaction=True)
def test_a_grant_stopped_midway_leaves_each_batch_with_its_one_audit_entry(staff, monkeypatch):
    # given: a grant decided two users per transaction, stopped in its third batch
    template = CouponTemplateFactory(total=100)
    users = [UserFactory() for _ in range(6)]
    real_batch = grants._grant_batch
    batches = []

    def stopped_in_the_third(*args, **kwargs):
        batches.append(args[1])
        if len(batches) == 3:
            raise SystemExit("the worker was stopped")
        return real_batch(*args, **kwargs)

    monkeypatch.setattr(grants, "GRANT_BATCH_SIZE", 2)
    monkeypatch.setattr(grants, "_grant_batch", stopped_in_the_third)

    with pytest.raises(SystemExit):
        grants.coupon_grant(
            template_id=template.pk,
            user_ids=[user.pk for user in users],
            reason="outage",
            granted_by_id=staff.pk,
            audit=staff_audit(staff, StaffAction.COUPONS_GRANT),
        )

    # then: the first two batches' coupons, and one entry that counts exactly them
    granted = set(UserCoupon.objects.values_list("user_id", flat=True))
    assert granted == {user.pk for user in users[:4]}
    template.refresh_from_db()
    assert template.claimed_count == 4
    [run] = grant_runs(template)
    assert run == {"users": 6, "reason": "outage", "outcomes": {"granted": 4}}


def test_the_grant_command_records_one_entry_for_a_file_of_many_batches(
    tmp_path, staff, monkeypatch
):
    template = CouponTemplateFactory(total=4, per_user_limit=1)
    users = [UserFactory() for _ in range(7)]
    users_file = tmp_path / "users.txt"
    users_file.write_text("".join(f"{user.pk}\n" for user in users))
    monkeypatch.setattr(grants, "GRANT_BATCH_SIZE", 3)
    out = StringIO()

    call_command(
        "grant_coupons", str(template.pk), "--users-file", str(users_file),
        "--reason", "launch", "--as", staff.username, stdout=out,
    )  # fmt: skip

    # three batches, their progress, one entry; the total holds across batches
    assert ["3/7", "6/7", "7/7"] == [
        line.strip() for line in out.getvalue().splitlines() if line.strip().endswith("/7")
    ]
    assert grant_runs(template) == [
        {"users": 7, "reason": "launch", "outcomes": {"granted": 4, "sold_out": 3}}
    ]
    assert UserCoupon.objects.filter(template=template).count() == 4


def test_the_audit_counts_the_unknown_usernames_the_admin_reported(admin_site):
    """Issue 42: the page said "unknown usernames: ghost", the history left them out."""
    template = CouponTemplateFactory()
    UserFactory(username="known")

    response = admin_grant(admin_site, template, "known\nghost\nphantom")

    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert "ghost, phantom" in message
    [run] = grant_runs(template)
    assert run["outcomes"] == {"granted": 1, "unknown_user": 2}
