"""Staff manage products in the Django admin; orders are shown there read-only."""

import pytest

from orders import services
from orders.models import Product
from tests.factories import ProductFactory

pytestmark = pytest.mark.django_db


def test_add_a_product(admin_site):
    response = admin_site.post(
        "/admin/orders/product/add/", {"name": "Mug", "price": "1999", "stock": "40"}
    )

    assert response.status_code == 302
    assert list(Product.objects.values_list("name", "price", "stock")) == [("Mug", 1999, 40)]


@pytest.mark.parametrize(
    ("field", "value"), [("price", "-1"), ("price", "100000000001"), ("stock", "-5")]
)
def test_out_of_range_product_values_are_form_errors_not_crashes(admin_site, field, value):
    data = {"name": "Mug", "price": "1999", "stock": "40"} | {field: value}

    response = admin_site.post("/admin/orders/product/add/", data)

    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert Product.objects.count() == 0


def test_orders_are_visible_but_not_editable(admin_site, user, now):
    product = ProductFactory(price=100)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )

    assert admin_site.get("/admin/orders/order/").status_code == 200
    assert admin_site.get(f"/admin/orders/order/{order.pk}/change/").status_code == 200
    assert admin_site.get("/admin/orders/order/add/").status_code == 403
    posted = admin_site.post(f"/admin/orders/order/{order.pk}/change/", {"status": "paid"})
    assert posted.status_code == 403
    order.refresh_from_db()
    assert order.status == "pending_payment"
