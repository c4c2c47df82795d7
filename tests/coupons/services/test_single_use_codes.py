"""Single-use codes in bulk (SPEC section 18): created N at a time, unique, unguessable and
without look-alikes; listed and exported; each issues its template once through the issuing
core, and of many users racing one code exactly one wins."""

import re

import pytest
from django.contrib.auth.models import Permission

from backoffice.staff_jobs.models import StaffJob
from coupons.errors import TemplateInvalid
from coupons.models import UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import codes
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url
from tests.support.staff_jobs import finished_job, job_file

CODE_FORM = re.compile(r"^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{10,}$")


def create_codes(client, template_id, body):
    return client.post(f"/api/admin/coupons/{template_id}/codes", body, format="json")


def redeem(client, code):
    return client.post("/api/coupons/redeem", {"code": code}, format="json")


@pytest.mark.django_db
def test_staff_create_5000_unique_codes_without_look_alikes(staff_client):
    template = CouponTemplateFactory(total=5000)

    response = create_codes(staff_client, template.pk, {"count": 5000, "codes_only": True})

    assert response.status_code == 201, response.json()
    assert response.json() == {"created": 5000, "codes_only": True}
    made = list(SingleUseCode.objects.filter(template=template).values_list("code", flat=True))
    assert len(made) == len(set(made)) == 5000
    assert all(CODE_FORM.match(code) for code in made)
    assert not set("".join(made)) & set("0O1IL")
    template.refresh_from_db()
    assert template.has_single_use_codes is True


def test_codes_come_from_the_whole_alphabet():
    drawn = {codes.single_use_code_new() for _ in range(2000)}
    assert len(drawn) == 2000
    assert set("".join(drawn)) == set("23456789ABCDEFGHJKMNPQRSTUVWXYZ")
    assert {len(code) for code in drawn} == {12}


@pytest.mark.django_db
def test_a_collision_is_retried_with_fresh_codes(monkeypatch):
    template = CouponTemplateFactory()
    taken = SingleUseCode.objects.create(template=template, code="TAKENTAKEN22")
    draws = iter(["TAKENTAKEN22", "FRESHFRESH22", "FRESHFRESH33"])
    monkeypatch.setattr(codes, "single_use_code_new", lambda: next(draws))

    assert codes.single_use_codes_create(template_id=template.pk, count=1) == 1

    assert sorted(SingleUseCode.objects.values_list("code", flat=True)) == sorted(
        [taken.code, "FRESHFRESH22"]
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body", [{"count": 0}, {"count": 100_001}, {"count": "ten"}, {}, {"count": True}]
)
def test_a_bad_count_is_400_naming_the_field_with_nothing_created(staff_client, body):
    template = CouponTemplateFactory()

    response = create_codes(staff_client, template.pk, body)

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid"
    assert list(response.json()["fields"]) == ["count"]
    assert SingleUseCode.objects.count() == 0
    template.refresh_from_db()
    assert template.has_single_use_codes is False


@pytest.mark.django_db
def test_codes_of_an_unknown_template_are_404_and_shoppers_are_refused(
    staff_client, shopper_client
):
    template = CouponTemplateFactory()
    assert create_codes(staff_client, 999_999, {"count": 1}).status_code == 404
    assert staff_client.get("/api/admin/coupons/999999/codes").status_code == 404
    assert create_codes(shopper_client, template.pk, {"count": 1}).status_code == 403
    assert shopper_client.get(f"/api/admin/coupons/{template.pk}/codes").status_code == 403
    assert SingleUseCode.objects.count() == 0


@pytest.mark.django_db
def test_a_code_issues_its_template_once_and_the_list_shows_who_used_it(staff_client, frozen_now):
    template = CouponTemplateFactory(visibility="hidden", per_user_limit=5)
    codes.single_use_codes_create(template_id=template.pk, count=3)
    first, second, _third = SingleUseCode.objects.filter(template=template).order_by("id")
    winner, late = UserFactory(), UserFactory()

    won = redeem(bearer_client(winner), first.code.lower())  # codes ignore case
    used_again = redeem(bearer_client(late), first.code)
    own_second = redeem(bearer_client(winner), second.code)  # a second code: a second coupon

    assert won.status_code == 201, won.json()
    assert (won.json()["template_id"], won.json()["source"]) == (template.pk, "code")
    assert used_again.status_code == 409
    assert used_again.json()["code"] == "code_used"
    assert own_second.status_code == 201
    assert UserCoupon.objects.filter(template=template, user=winner).count() == 2
    assert not UserCoupon.objects.filter(user=late).exists()
    template.refresh_from_db()
    assert template.claimed_count == 2

    listed = staff_client.get(f"/api/admin/coupons/{template.pk}/codes?page_size=2").json()
    assert listed["count"] == 3 and listed["next"] is not None
    assert [row["code"] for row in listed["results"]] == [first.code, second.code]
    assert listed["results"][0]["used_by"] == winner.pk
    assert listed["results"][0]["used_at"] == "2026-06-01T12:00:00Z"
    page_two = staff_client.get(f"/api/admin/coupons/{template.pk}/codes?page_size=2&page=2")
    assert page_two.json()["results"][0]["used_by"] is None
    assert page_two.json()["results"][0]["used_at"] is None


@pytest.mark.django_db
def test_a_refused_redemption_leaves_the_code_unused(user, shopper_client):
    template = CouponTemplateFactory(total=1)
    codes.single_use_codes_create(template_id=template.pk, count=1)
    UserCouponFactory(template=template)  # then sold out, by a grant say
    code = SingleUseCode.objects.get()

    response = redeem(shopper_client, code.code)

    assert response.status_code == 409
    assert response.json()["code"] == "sold_out"
    code.refresh_from_db()
    assert (code.used_by_id, code.used_at) == (None, None)
    assert not UserCoupon.objects.filter(user=user).exists()


@pytest.mark.django_db
def test_codes_created_without_choosing_codes_only_leave_the_template_in_the_shop(
    staff_client, shopper_client
):
    """Issue: generating codes silently took a public campaign out of the shop. Unless staff
    choose codes-only, it stays listed and claimable by id and by its shared code, and each
    code issues it once more."""
    template = CouponTemplateFactory(code="SHARED-2", total=10)

    created = create_codes(staff_client, template.pk, {"count": 2})
    code = SingleUseCode.objects.first()
    listed = shopper_client.get("/api/coupons").json()["count"]
    answers = [
        bearer_client(UserFactory()).post(claim_url(template)),
        redeem(bearer_client(UserFactory()), "SHARED-2"),
        redeem(bearer_client(UserFactory()), code.code),
    ]

    assert created.json() == {"created": 2, "codes_only": False}
    assert listed == 1
    assert [answer.status_code for answer in answers] == [201, 201, 201]
    template.refresh_from_db()
    assert (template.has_single_use_codes, template.claimed_count) == (False, 3)


@pytest.mark.django_db
def test_a_codes_only_template_is_not_claimable_by_id_nor_listed(shopper_client):
    template = CouponTemplateFactory(code="SHARED-1")
    listed_before = shopper_client.get("/api/coupons").json()["count"]
    codes.single_use_codes_create(template_id=template.pk, count=2, codes_only=True)

    by_id = shopper_client.post(claim_url(template))
    by_shared_code = redeem(shopper_client, "SHARED-1")

    assert (listed_before, shopper_client.get("/api/coupons").json()["count"]) == (1, 0)
    for response in (by_id, by_shared_code):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
    assert UserCoupon.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_of_many_users_racing_one_code_exactly_one_wins():
    template = CouponTemplateFactory(total=100, visibility="hidden")
    codes.single_use_codes_create(template_id=template.pk, count=1)
    code = SingleUseCode.objects.get()
    users = [UserFactory() for _ in range(30)]

    responses = run_together(
        [lambda user=user: redeem(bearer_client(user), code.code) for user in users]
    )

    assert sorted(r.status_code for r in responses) == [201] + [409] * 29
    assert {r.json()["code"] for r in responses if r.status_code == 409} == {"code_used"}
    winner = next(user for user, r in zip(users, responses, strict=True) if r.status_code == 201)
    code.refresh_from_db()
    assert code.used_by_id == winner.pk
    assert list(UserCoupon.objects.values_list("user_id", flat=True)) == [winner.pk]
    template.refresh_from_db()
    assert template.claimed_count == 1


@pytest.mark.django_db
def test_the_admin_exports_the_codes_as_csv_to_whoever_may_export(admin_site, client):
    template = CouponTemplateFactory(name="=HYPERLINK(1) 新人券")
    codes.single_use_codes_create(template_id=template.pk, count=3)
    used = SingleUseCode.objects.order_by("id").first()
    user = UserFactory(username="@alice")
    SingleUseCode.objects.filter(pk=used.pk).update(used_by=user, used_at=template.valid_from)

    job = finished_job(
        admin_site.post(
            "/admin/coupons/coupontemplate/",
            {"action": "export_single_use_codes", "_selected_action": [template.pk]},
        )
    )

    body = job_file(admin_site, job).decode("utf-8")
    assert body.startswith("\ufefftemplate id,template,code,used by,used at,created at\r\n")
    lines = body.lstrip("\ufeff").splitlines()
    assert len(lines) == 4
    assert lines[1].startswith(f"{template.pk},'=HYPERLINK(1) 新人券,{used.code},'@alice,")
    assert "." not in lines[1].split(",")[4]  # no microseconds

    # Exporting needs coupons.export_coupons, like the coupons CSV, and coupons.manage_codes
    # (codes are bearer secrets): viewing is not enough, nor is either alone.
    viewer = UserFactory(is_staff=True)
    client.force_login(viewer)
    export = {"action": "export_single_use_codes", "_selected_action": [template.pk]}
    assert client.post("/admin/coupons/coupontemplate/", export).status_code == 403
    viewer.user_permissions.add(Permission.objects.get(codename="view_coupontemplate"))
    refused = client.post("/admin/coupons/coupontemplate/", export)
    assert refused.status_code == 200  # the list again: no such action for this user
    viewer.user_permissions.add(Permission.objects.get(codename="export_coupons"))
    assert client.post("/admin/coupons/coupontemplate/", export).status_code in (200, 302)
    assert StaffJob.objects.filter(started_by=viewer).count() == 0  # the list again
    viewer.user_permissions.add(Permission.objects.get(codename="manage_codes"))
    allowed = finished_job(client.post("/admin/coupons/coupontemplate/", export))
    assert len(job_file(client, allowed).decode().splitlines()) == 4


@pytest.mark.django_db
def test_a_prefix_starts_every_code_and_a_bad_one_makes_none():
    template = CouponTemplateFactory(total=10)

    created = codes.single_use_codes_create(template_id=template.pk, count=3, prefix=" vip ")
    with pytest.raises(TemplateInvalid) as refused:
        codes.single_use_codes_create(template_id=template.pk, count=3, prefix="VIP-2")

    made = list(SingleUseCode.objects.values_list("code", flat=True))
    assert created == 3 and len(made) == 3
    assert all(re.fullmatch(r"VIP-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{12}", code) for code in made)
    assert list(refused.value.fields) == ["prefix"]
