"""The Django admin publishes and edits through the same rules as the API."""

from datetime import timedelta

import pytest

from config import clock
from coupons.models import CouponTemplate
from tests.factories import CouponTemplateFactory, UserCouponFactory

pytestmark = pytest.mark.django_db


def form_data(**overrides):
    start = clock.now()
    end = start + timedelta(days=3)
    data = {
        "name": "Admin coupon",
        "type": "threshold",
        "value": "1000",
        "min_amount": "5000",
        "total": "10",
        "per_user_limit": "1",
        "valid_from_0": start.strftime("%Y-%m-%d"),
        "valid_from_1": start.strftime("%H:%M:%S"),
        "valid_until_0": end.strftime("%Y-%m-%d"),
        "valid_until_1": end.strftime("%H:%M:%S"),
        "scope": "all",
        "visibility": "public",
    }
    return data | overrides


def test_publish_through_the_django_admin(admin_site):
    response = admin_site.post("/admin/coupons/coupontemplate/add/", form_data())

    assert response.status_code == 302
    template = CouponTemplate.objects.get()
    assert (template.name, template.value, template.min_amount) == ("Admin coupon", 1000, 5000)


def test_admin_form_shows_the_service_rules(admin_site):
    response = admin_site.post(
        "/admin/coupons/coupontemplate/add/", form_data(min_amount="10", name="  ")
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) >= {"min_amount", "name"}
    assert CouponTemplate.objects.count() == 0


def test_admin_edit_refuses_frozen_terms(admin_site):
    template = UserCouponFactory().template
    url = f"/admin/coupons/coupontemplate/{template.pk}/change/"

    response = admin_site.post(url, form_data(type="direct", value="900", min_amount="0"))

    assert response.status_code == 200
    assert "value" in response.context["adminform"].form.errors
    template.refresh_from_db()
    assert template.value == 500


def test_admin_list_shows_claimed_of_total_and_state(admin_site):
    template = CouponTemplateFactory(name="Listed", total=7)
    UserCouponFactory(template=template)

    response = admin_site.get("/admin/coupons/coupontemplate/?q=Listed&state=active&type=direct")

    assert response.status_code == 200
    assert b"1 / 7" in response.content
    assert b"active" in response.content


def test_claimed_template_cannot_be_deleted_in_the_admin(admin_site):
    claimed = UserCouponFactory().template
    unclaimed = CouponTemplateFactory()

    refused = admin_site.post(
        f"/admin/coupons/coupontemplate/{claimed.pk}/delete/", {"post": "yes"}
    )
    allowed = admin_site.post(
        f"/admin/coupons/coupontemplate/{unclaimed.pk}/delete/", {"post": "yes"}
    )

    assert refused.status_code == 403
    assert allowed.status_code == 302
    assert list(CouponTemplate.objects.values_list("pk", flat=True)) == [claimed.pk]


def test_delete_refused_when_a_claim_lands_after_the_page_was_shown(admin_site, rf, staff):
    """The admin hid nothing (no claim yet); the service re-checks under the row lock."""
    from django.contrib.admin.sites import site
    from django.core.exceptions import PermissionDenied

    template = CouponTemplateFactory()
    shown = CouponTemplate.objects.get(pk=template.pk)  # what the confirmation page saw
    UserCouponFactory(template=template)  # the claim that lands meanwhile

    with pytest.raises(PermissionDenied, match="cannot be deleted"):
        site._registry[CouponTemplate].delete_model(rf.post("/"), shown)

    assert CouponTemplate.objects.filter(pk=template.pk).exists()
