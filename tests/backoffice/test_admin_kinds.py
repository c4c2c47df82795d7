"""The Django admin with the new template fields (same validation as the API) and the
"Grant to users" action (same service as the API)."""

import pytest

from coupons.models import CouponTemplate, UserCoupon
from orders.models import Category
from tests.support import admin_forms
from tests.support.factories import CouponTemplateFactory, UserFactory

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/coupons/coupontemplate/"


def form_data(**overrides):
    """A percent coupon capped at 30.00, on the admin form's usual fields."""
    percent = {
        "name": "Admin percent",
        "type": "percent",
        "value": "15",
        "min_amount": "0",
        "max_discount": "30.00",  # money as currency (SPEC section 13)
        "valid_days": "",
        "code": "",
    }
    return admin_forms.form_data(**(percent | overrides))


def test_the_admin_publishes_a_scoped_percent_coupon_and_lists_categories(admin_site):
    tea = Category.objects.create(name="Tea")
    page = admin_site.get(f"{CHANGELIST}add/")
    assert f'<option value="{tea.pk}">Tea</option>'.encode() in page.content

    response = admin_site.post(
        f"{CHANGELIST}add/",
        form_data(scope="categories", scope_categories=[tea.pk], code="Admin-15", valid_days="5"),
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    template = CouponTemplate.objects.get()
    assert (template.type, template.value, template.max_discount) == ("percent", 15, 3000)
    assert (template.scope, template.scope_ids, template.code, template.valid_days) == (
        "categories",
        [tea.pk],
        "Admin-15",
        5,
    )


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"value": "100"}, "value"),
        ({"type": "direct", "value": "500"}, "max_discount"),
        ({"scope": "categories"}, "scope_categories"),
        ({"scope": "products", "scope_products": ["x"]}, "scope_products"),
        ({"code": "no"}, "code"),
        ({"valid_days": "0"}, "valid_days"),
    ],
)
def test_the_admin_applies_the_same_rules(admin_site, overrides, field):
    response = admin_site.post(f"{CHANGELIST}add/", form_data(**overrides))

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert CouponTemplate.objects.count() == 0


def test_the_grant_action_grants_through_the_service(admin_site, staff):
    template = CouponTemplateFactory(total=5)
    alice, bob = UserFactory(username="alice"), UserFactory()
    chosen = {"action": "grant_to_users", "_selected_action": [template.pk]}

    page = admin_site.post(CHANGELIST, chosen)
    assert page.status_code == 200
    assert b"Grant" in page.content

    done = admin_site.post(
        CHANGELIST,
        chosen | {"apply": "1", "users": f"alice\n{bob.pk}\nghost\n", "reason": "Admin grant"},
        follow=True,
    )

    assert done.status_code == 200
    message = str(list(done.context["messages"])[0])
    assert f"granted: alice, {bob.username}" in message
    assert "unknown usernames: ghost" in message
    coupons = UserCoupon.objects.order_by("user_id")
    assert [(c.user_id, c.source, c.granted_by_id, c.grant_reason) for c in coupons] == [
        (alice.pk, "grant", staff.pk, "Admin grant"),
        (bob.pk, "grant", staff.pk, "Admin grant"),
    ]


def test_the_admin_has_no_bulk_delete(admin_site):
    CouponTemplateFactory()
    page = admin_site.get(CHANGELIST)
    assert b"delete_selected" not in page.content
    assert b"grant_to_users" in page.content


def test_a_percent_past_99_is_refused_with_what_to_type(admin_site):
    response = admin_site.post(f"{CHANGELIST}add/", form_data(value="150"))

    errors = response.context["adminform"].form.errors
    assert errors["value"] == [
        "A percent coupon takes 1 to 99 percent off: 15 means 15 percent off (85折)."
    ]
    assert CouponTemplate.objects.count() == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"type": "direct", "value": "1200000000000", "max_discount": ""}, "value"),
        ({"min_amount": "1,200,000,000,000.00"}, "min_amount"),
        ({"max_discount": "10000000.01"}, "max_discount"),
    ],
)
def test_an_implausible_amount_is_refused(admin_site, overrides, field):
    response = admin_site.post(f"{CHANGELIST}add/", form_data(**overrides))

    errors = response.context["adminform"].form.errors
    assert list(errors) == [field]
    assert "10,000,000.00" in errors[field][0]
    assert CouponTemplate.objects.count() == 0


def test_the_amount_bound_admits_ten_million(admin_site):
    response = admin_site.post(
        f"{CHANGELIST}add/", form_data(type="direct", value="10000000.00", max_discount="")
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert CouponTemplate.objects.get().value == 10_000_000_00
