"""The new template terms of SPEC sections 10-11 through the admin API: accepted, returned,
each bad value a 400 naming its field with nothing written, and the freeze rule extended."""

import pytest

from coupons.models import CouponTemplate
from orders.models import Category
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserCouponFactory

pytestmark = pytest.mark.django_db

PERCENT = {
    "name": "12% off, at most 30.00",
    "type": "percent",
    "value": 12,
    "max_discount": 3000,
    "min_amount": 10000,
    "total": 100,
    "valid_from": "2026-06-01T00:00:00+08:00",
    "valid_until": "2026-06-30T00:00:00+08:00",
}


def test_a_percent_coupon_with_a_cap_scope_code_and_own_window_is_published(staff_client):
    tea = Category.objects.create(name="Tea")

    response = staff_client.post(
        "/api/admin/coupons",
        PERCENT
        | {
            "valid_days": 7,
            "scope": "categories",
            "scope_ids": [tea.pk, tea.pk],  # repeats are dropped
            "code": "Tea-Time_26",
            "visibility": "hidden",
        },
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert {key: body[key] for key in ("type", "value", "max_discount", "min_amount")} == {
        "type": "percent",
        "value": 12,
        "max_discount": 3000,
        "min_amount": 10000,
    }
    assert (body["valid_days"], body["scope"], body["scope_ids"]) == (7, "categories", [tea.pk])
    assert (body["code"], body["visibility"]) == ("Tea-Time_26", "hidden")
    template = CouponTemplate.objects.get()
    assert (template.code_key, template.scope_ids) == ("TEA-TIME_26", [tea.pk])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"value": 0}, "value"),
        ({"value": 100}, "value"),  # percent is 1..99
        ({"max_discount": 0}, "max_discount"),
        ({"max_discount": -5}, "max_discount"),
        ({"type": "direct", "min_amount": 0}, "max_discount"),  # a cap on a non-percent
        ({"type": "threshold", "value": 500, "min_amount": 10000}, "max_discount"),
        ({"valid_days": 0}, "valid_days"),
        ({"valid_days": 3651}, "valid_days"),
        ({"valid_days": "week"}, "valid_days"),
        ({"scope": "brands", "scope_ids": [1]}, "scope"),
        ({"scope": "categories", "scope_ids": []}, "scope_ids"),  # empty
        ({"scope": "products", "scope_ids": list(range(1, 502))}, "scope_ids"),  # too long
        ({"scope": "products", "scope_ids": ["x"]}, "scope_ids"),  # not ids
        ({"scope": "products", "scope_ids": [0]}, "scope_ids"),
        ({"scope": "products", "scope_ids": "1,2"}, "scope_ids"),
        ({"scope": "products", "scope_ids": [987654]}, "scope_ids"),  # no such product
        ({"scope_ids": [1]}, "scope_ids"),  # ids on a store-wide coupon
        ({"code": "abc"}, "code"),  # too short
        ({"code": "x" * 33}, "code"),
        ({"code": "no spaces"}, "code"),
        ({"code": "CAFÉ1"}, "code"),
        ({"code": ""}, "code"),
        ({"visibility": "secret"}, "visibility"),
    ],
)
def test_each_new_rule_is_a_400_naming_the_field(staff_client, change, field):
    response = staff_client.post("/api/admin/coupons", PERCENT | change, format="json")

    assert response.status_code == 400, response.json()
    body = response.json()
    assert (body["code"], list(body["fields"])) == ("invalid", [field])
    assert CouponTemplate.objects.count() == 0


def test_a_code_taken_in_another_case_is_a_400(staff_client):
    CouponTemplateFactory(code="SPRING26")

    response = staff_client.post(
        "/api/admin/coupons", PERCENT | {"code": "spring26"}, format="json"
    )

    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["code"]
    assert CouponTemplate.objects.count() == 1


def test_a_template_keeps_its_own_code_on_edit(staff_client):
    template = CouponTemplateFactory(code="KEEP1")
    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}", {"code": "keep1", "name": "x"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["code"] == "keep1"


def test_products_scope_accepts_known_products(staff_client):
    first, second = ProductFactory(), ProductFactory()
    response = staff_client.post(
        "/api/admin/coupons",
        PERCENT | {"scope": "products", "scope_ids": [second.pk, first.pk]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["scope_ids"] == [first.pk, second.pk]


@pytest.mark.parametrize(
    "change",
    [
        {"max_discount": 4000},
        {"valid_days": 30},
        {"scope": "products"},
        {"scope_ids": []},
    ],
)
def test_the_new_terms_freeze_once_claimed(staff_client, change):
    product = ProductFactory()
    template = CouponTemplateFactory(
        type="percent",
        value=10,
        max_discount=3000,
        valid_days=7,
        scope="categories",
        scope_ids=[Category.objects.create(name="Tea").pk],
    )
    UserCouponFactory(template=template)
    if "scope" in change:
        change = change | {"scope_ids": [product.pk]}
    before = CouponTemplate.objects.filter(pk=template.pk).values().get()

    response = staff_client.patch(f"/api/admin/coupons/{template.pk}", change, format="json")

    assert response.status_code == 400, response.json()
    assert set(change) & set(response.json()["fields"])
    assert CouponTemplate.objects.filter(pk=template.pk).values().get() == before


def test_code_visibility_and_window_may_change_once_claimed(staff_client):
    template = CouponTemplateFactory()
    UserCouponFactory(template=template)

    response = staff_client.patch(
        f"/api/admin/coupons/{template.pk}",
        {"code": "LATE-CODE", "visibility": "hidden", "valid_until": "2030-01-01T00:00:00Z"},
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert (response.json()["code"], response.json()["visibility"]) == ("LATE-CODE", "hidden")


def test_a_product_removed_from_the_catalog_does_not_block_other_edits(staff_client):
    product = ProductFactory()
    created = staff_client.post(
        "/api/admin/coupons",
        PERCENT | {"scope": "products", "scope_ids": [product.pk]},
        format="json",
    )
    removed_id = product.pk
    product.delete()

    renamed = staff_client.patch(
        f"/api/admin/coupons/{created.json()['id']}", {"name": "Renamed"}, format="json"
    )
    grown = staff_client.patch(
        f"/api/admin/coupons/{created.json()['id']}",
        {"scope_ids": [removed_id, 987654]},
        format="json",
    )

    assert renamed.status_code == 200, renamed.json()
    assert (grown.status_code, list(grown.json()["fields"])) == (400, ["scope_ids"])
    assert grown.json()["fields"]["scope_ids"] == ["Unknown products: 987654."]
