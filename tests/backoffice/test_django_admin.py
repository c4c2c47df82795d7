"""The Django admin publishes and edits through the same rules as the API."""

import pytest

from coupons.issuing import service as issuing
from coupons.models import CouponTemplate
from coupons.services import templates
from tests.support.admin_forms import form_data
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_publish_through_the_django_admin(admin_site):
    response = admin_site.post("/admin/coupons/coupontemplate/add/", form_data())

    assert response.status_code == 302
    template = CouponTemplate.objects.get()
    assert (template.name, template.value, template.min_amount) == ("Admin coupon", 1000, 5000)


def test_admin_form_shows_the_service_rules(admin_site):
    response = admin_site.post(
        "/admin/coupons/coupontemplate/add/", form_data(min_amount="0.10", name="  ")
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) >= {"min_amount", "name"}
    assert CouponTemplate.objects.count() == 0


def test_frozen_terms_are_read_only_once_claimed(admin_site):
    template = UserCouponFactory().template
    url = f"/admin/coupons/coupontemplate/{template.pk}/change/"

    response = admin_site.get(url)

    form = response.context["adminform"].form
    assert set(form.fields) == {
        "name",
        "total",
        "per_user_limit",
        "valid_from",
        "valid_until",
        "code",
        "visibility",
        "audience",
        "auto_issue",
        "auto_issue_min_pay",
    }
    page = response.content.decode()
    assert '<div class="readonly">¥5.00</div>' in page  # the value, as money
    assert 'name="value"' not in page


def test_an_edit_of_a_term_frozen_meanwhile_is_a_form_error_not_dropped(admin_site):
    """The page was shown before the first claim (value editable); the claim landed before
    the POST: the posted value must not be dropped silently."""
    template = UserCouponFactory().template
    url = f"/admin/coupons/coupontemplate/{template.pk}/change/"

    response = admin_site.post(
        url, form_data(name="Renamed", type="direct", value="9.00", min_amount="0")
    )

    assert response.status_code == 200
    assert "can no longer change" in str(response.context["adminform"].form.non_field_errors())
    template.refresh_from_db()
    assert (template.name, template.value) == (template.name, 500)
    assert template.name != "Renamed"


def claim_committed_elsewhere(template, user) -> None:
    """A shopper's claim, committed on another connection while the admin request runs."""
    run_together([lambda: issuing.coupon_claim(template_id=template.pk, user_id=user.pk)])


@pytest.mark.django_db(transaction=True)
def test_a_claim_landing_between_the_check_and_the_save_is_a_form_error(admin_site, monkeypatch):

    template, shopper = CouponTemplateFactory(name="Racing"), UserFactory()
    url = f"/admin/coupons/coupontemplate/{template.pk}/change/"
    real_edit = templates.coupon_template_edit

    def claim_then_edit(**kwargs):
        claim_committed_elsewhere(template, shopper)  # lands after the form's check
        monkeypatch.setattr(templates, "coupon_template_edit", real_edit)
        return real_edit(**kwargs)

    monkeypatch.setattr(templates, "coupon_template_edit", claim_then_edit)

    response = admin_site.post(
        url, form_data(name="Racing", type="direct", value="9.00", min_amount="0")
    )

    assert response.status_code == 200
    assert "can no longer change" in str(response.context["adminform"].form.non_field_errors())
    template.refresh_from_db()
    assert (template.value, template.claimed_count) == (500, 1)


def test_admin_list_shows_claimed_of_total_and_state(admin_site):
    template = CouponTemplateFactory(name="Listed", total=7)
    UserCouponFactory(template=template)

    response = admin_site.get("/admin/coupons/coupontemplate/?q=Listed&state=active&type=direct")

    assert response.status_code == 200
    assert b"1 / 7" in response.content
    assert b"active" in response.content


def test_claimed_template_cannot_be_deleted_and_the_page_says_why(admin_site):
    claimed = UserCouponFactory().template
    unclaimed = CouponTemplateFactory()

    refused = admin_site.post(
        f"/admin/coupons/coupontemplate/{claimed.pk}/delete/", {"post": "yes"}
    )
    allowed = admin_site.post(
        f"/admin/coupons/coupontemplate/{unclaimed.pk}/delete/", {"post": "yes"}
    )

    assert refused.status_code == 409
    assert refused["Content-Type"].startswith("text/html")
    page = refused.content.decode()
    assert "1 coupon has been claimed from this template." in page
    assert "A template with claims cannot be deleted" in page
    assert allowed.status_code == 302
    assert list(CouponTemplate.objects.values_list("pk", flat=True)) == [claimed.pk]


@pytest.mark.django_db(transaction=True)
def test_delete_refused_when_a_claim_lands_after_the_page_was_shown(admin_site, monkeypatch):
    """The admin saw no claim; the service re-checks under the row lock and refuses."""

    template, shopper = CouponTemplateFactory(), UserFactory()
    real_delete = templates.coupon_template_delete

    def claim_then_delete(**kwargs):
        claim_committed_elsewhere(template, shopper)
        return real_delete(**kwargs)

    monkeypatch.setattr(templates, "coupon_template_delete", claim_then_delete)

    response = admin_site.post(
        f"/admin/coupons/coupontemplate/{template.pk}/delete/", {"post": "yes"}
    )

    assert response.status_code == 409
    assert "1 coupon has been claimed from this template." in response.content.decode()
    assert CouponTemplate.objects.filter(pk=template.pk).exists()
