"""Grants (SPEC section 11): the admin API and `grant_coupons`, in batches under the claim's
rule, with the claim's total and per-user limit, allowed before the window opens, refused
after it ended, and idempotent per (template, user, reason)."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core import clock
from coupons.models import CouponTemplate, UserCoupon
from coupons.services import grants
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url


def grants_url(template) -> str:
    return f"/api/admin/coupons/{template.pk}/grants"


@pytest.mark.django_db
def test_a_grant_sorts_the_users_in_the_order_given(staff, staff_client):
    template = CouponTemplateFactory(total=3, per_user_limit=1)
    holder, first, second, third, late = (UserFactory() for _ in range(5))
    UserCouponFactory(template=template, user=holder)  # 1 of 3 taken, holder at their limit

    response = staff_client.post(
        grants_url(template),
        {
            "user_ids": [second.pk, 987654, holder.pk, first.pk, second.pk, third.pk, late.pk],
            "reason": "  Late delivery, order 1234  ",
        },
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert response.json() == {
        "granted": [second.pk, first.pk],
        "limit_reached": [holder.pk],
        "sold_out": [third.pk, late.pk],
        "unknown_user": [987654],
        "already_granted": [],
        "ended": [],
        "paused": [],
        "not_eligible": [],
    }
    granted = UserCoupon.objects.filter(source="grant").order_by("id")
    assert [(c.user_id, c.granted_by_id, c.grant_reason) for c in granted] == [
        (second.pk, staff.pk, "Late delivery, order 1234"),
        (first.pk, staff.pk, "Late delivery, order 1234"),
    ]
    template.refresh_from_db()
    assert template.claimed_count == 3
    mine = bearer_client(first).get("/api/coupons/mine").json()["results"]
    assert [(item["source"], item["template_id"]) for item in mine] == [("grant", template.pk)]


@pytest.mark.django_db
def test_the_same_grant_again_issues_nothing_twice(staff_client):
    template = CouponTemplateFactory(total=100, per_user_limit=5)
    users = [UserFactory() for _ in range(3)]
    body = {"user_ids": [u.pk for u in users], "reason": "Compensation #7"}

    first = staff_client.post(grants_url(template), body, format="json").json()
    again = staff_client.post(grants_url(template), body, format="json").json()
    other_reason = staff_client.post(
        grants_url(template), body | {"reason": "Birthday"}, format="json"
    ).json()

    assert first["granted"] == [u.pk for u in users]
    assert (again["granted"], again["already_granted"]) == ([], [u.pk for u in users])
    assert other_reason["granted"] == [u.pk for u in users]  # a new reason is a new grant
    assert UserCoupon.objects.filter(template=template).count() == 6


@pytest.mark.django_db
def test_a_grant_may_come_before_the_window_but_not_after_it_ended(staff_client, frozen_now):
    now = frozen_now.now()
    early = CouponTemplateFactory(
        valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2)
    )
    ended = CouponTemplateFactory(
        valid_from=now - timedelta(days=2), valid_until=now - timedelta(milliseconds=1)
    )
    user = UserFactory()
    body = {"user_ids": [user.pk], "reason": "VIP"}

    assert staff_client.post(grants_url(early), body, format="json").json()["granted"] == [user.pk]
    response = staff_client.post(grants_url(ended), body, format="json")

    assert (response.status_code, response.json()["code"]) == (409, "not_in_window")
    assert UserCoupon.objects.filter(template=ended).count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_ids": list(range(1, 1002)), "reason": "x"}, "user_ids"),  # over 1,000
        ({"user_ids": [], "reason": "x"}, "user_ids"),
        ({"user_ids": ["bob"], "reason": "x"}, "user_ids"),
        ({"user_ids": [0], "reason": "x"}, "user_ids"),
        ({"user_ids": 5, "reason": "x"}, "user_ids"),
        ({"user_ids": [1], "reason": "   "}, "reason"),
        ({"user_ids": [1], "reason": "x" * 256}, "reason"),
        ({"user_ids": [1]}, "reason"),
        ({"user_ids": [1], "reason": "x", "extra": 1}, "extra"),
    ],
)
def test_bad_grants_are_a_400_naming_the_field(staff_client, body, field):
    template = CouponTemplateFactory()

    response = staff_client.post(grants_url(template), body, format="json")

    assert response.status_code == 400, response.json()
    assert list(response.json()["fields"]) == [field]
    assert UserCoupon.objects.count() == 0


@pytest.mark.django_db
def test_grants_are_for_staff_and_known_templates(shopper_client, staff_client):
    template = CouponTemplateFactory()
    body = {"user_ids": [1], "reason": "x"}
    assert shopper_client.post(grants_url(template), body, format="json").status_code == 403
    response = staff_client.post("/api/admin/coupons/987654/grants", body, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.django_db(transaction=True)
def test_a_grant_racing_claims_on_total_10_issues_exactly_10():
    template = CouponTemplateFactory(total=10)
    granted_users = [UserFactory() for _ in range(8)]
    claimers = [UserFactory() for _ in range(20)]

    def grant():
        return grants.coupon_grant(
            template_id=template.pk,
            user_ids=[u.pk for u in granted_users],
            reason="race",
            granted_by_id=None,
        )

    claims = [
        lambda user=user: bearer_client(user).post(claim_url(template)).status_code
        for user in claimers
    ]
    outcomes = run_together([grant, *claims])

    result, statuses = outcomes[0], outcomes[1:]
    assert len(result.granted) + statuses.count(201) == 10
    assert sorted(result.granted + result.sold_out) == sorted(u.pk for u in granted_users)
    assert set(statuses) <= {201, 409}
    template.refresh_from_db()
    assert template.claimed_count == 10
    assert UserCoupon.objects.filter(template=template).count() == 10
    assert UserCoupon.objects.filter(template=template, source="grant").count() == len(
        result.granted
    )


@pytest.mark.django_db(transaction=True)
def test_two_runs_of_one_grant_racing_issue_each_user_once():
    template = CouponTemplateFactory(total=100, per_user_limit=3)
    users = [UserFactory() for _ in range(10)]

    def grant():
        return grants.coupon_grant(
            template_id=template.pk,
            user_ids=[u.pk for u in users],
            reason="twice",
            granted_by_id=None,
        )

    first, second = run_together([grant, grant])

    assert sorted(first.granted + second.granted) == sorted(u.pk for u in users)
    assert sorted(first.already_granted + second.already_granted) == sorted(u.pk for u in users)
    assert UserCoupon.objects.filter(template=template).count() == 10


@pytest.mark.django_db
def test_the_grant_command_reads_names_and_ids_shows_progress_and_is_safe_to_rerun(tmp_path, staff):
    template = CouponTemplateFactory(total=100, per_user_limit=2)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    users_file = tmp_path / "users.txt"
    users_file.write_text(f"# compensation list\nalice\n{bob.pk}\n\nnobody\n987654\n")

    def run() -> str:
        out = StringIO()
        call_command(
            "grant_coupons",
            str(template.pk),
            "--users-file",
            str(users_file),
            "--reason",
            "Outage 2026-11-30",
            "--granted-by",
            staff.username,
            stdout=out,
        )
        return out.getvalue()

    first = run()
    second = run()

    assert "2/3" not in first and "3/3" in first  # progress
    assert "granted 2" in first and "unknown_user 2" in first
    assert "unknown usernames: nobody" in first
    assert "granted 0" in second and "already_granted 2" in second
    coupons = UserCoupon.objects.filter(template=template).order_by("user_id")
    assert [(c.user_id, c.source, c.granted_by_id) for c in coupons] == [
        (alice.pk, "grant", staff.pk),
        (bob.pk, "grant", staff.pk),
    ]


@pytest.mark.django_db
def test_the_grant_command_refuses_an_ended_template(tmp_path, staff):
    now = clock.now()
    template = CouponTemplateFactory(
        valid_from=now - timedelta(days=2), valid_until=now - timedelta(days=1)
    )
    users_file = tmp_path / "users.txt"
    users_file.write_text(f"{UserFactory().pk}\n")

    with pytest.raises(CommandError, match="ended"):
        call_command(
            "grant_coupons",
            str(template.pk),
            "--users-file",
            str(users_file),
            "--reason",
            "x",
            "--as",
            staff.username,
        )
    assert UserCoupon.objects.count() == 0
    assert CouponTemplate.objects.get().claimed_count == 0


@pytest.mark.django_db
def test_a_retried_grant_replays_the_first_answer(staff_client):
    template = CouponTemplateFactory(total=10, per_user_limit=5)
    user = UserFactory()

    def send():
        return staff_client.post(
            grants_url(template),
            {"user_ids": [user.pk], "reason": "retry"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="g-1",
        )

    first, retry = send(), send()

    assert first.json()["granted"] == [user.pk]
    assert retry.json() == first.json()  # the first answer, not "already_granted"
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert UserCoupon.objects.count() == 1
