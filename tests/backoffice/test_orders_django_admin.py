"""Staff manage products in the Django admin; orders are shown there read-only."""

import pytest

from orders import services
from orders.models import Product
from tests.support.factories import ProductFactory

pytestmark = pytest.mark.django_db


def test_add_a_product(admin_site):
    response = admin_site.post(
        "/admin/orders/product/add/", {"name": "Mug", "price": "19.99", "stock": "40"}
    )

    assert response.status_code == 302
    assert list(Product.objects.values_list("name", "price", "stock")) == [("Mug", 1999, 40)]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("price", "-1"),
        ("price", "1000000000.01"),
        ("price", "12.345"),
        ("price", "1e5"),
        ("price", "abc"),
        ("stock", "-5"),
    ],
)
def test_out_of_range_product_values_are_form_errors_not_crashes(admin_site, field, value):
    data = {"name": "Mug", "price": "19.99", "stock": "40"} | {field: value}

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


def test_stock_is_changed_by_an_adjustment_that_never_undoes_a_checkout(admin_site, user, now):
    product = ProductFactory(name="Mug", price=1000, stock=10)
    url = f"/admin/orders/product/{product.pk}/change/"
    form = admin_site.get(url).context["adminform"].form  # the page shows stock 10
    assert "stock" not in form.fields
    services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 3}])

    response = admin_site.post(
        url, {"name": "Mug", "price": "10.00", "stock_change": "5"}
    )  # the checkout's decrement happened after the page was shown

    assert response.status_code == 302
    product.refresh_from_db()
    assert product.stock == 12  # 10 - 3 + 5, not 10 + 5


def assert_refused_with_nothing_changed(response, product) -> None:
    """Taking 3 from a "Mug" with 2 in stock: the form says so, and neither the rename nor
    the stock was written."""
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["stock_change"] == [
        "Only 2 in stock; cannot take away 3."
    ]
    product.refresh_from_db()
    assert (product.name, product.stock) == ("Mug", 2)


def test_an_adjustment_below_zero_is_a_form_error_with_nothing_changed(admin_site):
    product = ProductFactory(name="Mug", price=1000, stock=2)

    response = admin_site.post(
        f"/admin/orders/product/{product.pk}/change/",
        {"name": "Renamed", "price": "10.00", "stock_change": "-3"},
    )

    assert_refused_with_nothing_changed(response, product)


@pytest.mark.django_db(transaction=True)
def test_a_checkout_between_the_form_check_and_the_adjustment_is_a_form_error(
    admin_site, monkeypatch
):
    """The form saw 3 in stock, so taking 3 away passed; a checkout then took 1. The atomic
    adjustment refuses, and the page says so with nothing written (not even the rename)."""
    from backoffice.order_admin import orders as orders_admin
    from tests.support.concurrency import run_together
    from tests.support.factories import UserFactory

    product, shopper = ProductFactory(name="Mug", price=1000, stock=3), UserFactory()
    real_clean = orders_admin.ProductForm.clean

    def check_then_checkout(form):
        cleaned = real_clean(form)
        monkeypatch.setattr(orders_admin.ProductForm, "clean", real_clean)  # once
        run_together(
            [
                lambda: services.order_checkout(
                    user_id=shopper.pk, items=[{"product_id": product.pk, "quantity": 1}]
                )
            ]
        )
        return cleaned

    monkeypatch.setattr(orders_admin.ProductForm, "clean", check_then_checkout)

    response = admin_site.post(
        f"/admin/orders/product/{product.pk}/change/",
        {"name": "Renamed", "price": "10.00", "stock_change": "-3"},
    )

    assert_refused_with_nothing_changed(response, product)


def test_orders_list_shows_money_coupon_and_filters_by_template(admin_site, user, now):
    from tests.support.factories import CouponTemplateFactory, UserCouponFactory

    product = ProductFactory(price=2000, stock=10)
    first, second = CouponTemplateFactory(value=500), CouponTemplateFactory(value=300)
    with_first = services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": product.pk, "quantity": 1}],
        coupon_id=UserCouponFactory(user=user, template=first).pk,
    )
    services.order_checkout(
        user_id=user.pk,
        items=[{"product_id": product.pk, "quantity": 1}],
        coupon_id=UserCouponFactory(user=user, template=second).pk,
    )
    services.order_checkout(user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}])

    everything = admin_site.get("/admin/orders/order/")
    filtered = admin_site.get(f"/admin/orders/order/?coupon_template={first.pk}")

    assert len(everything.context["cl"].result_list) == 3
    assert [order.pk for order in filtered.context["cl"].result_list] == [with_first.pk]
    page = filtered.content.decode()
    assert '<td class="field-total">¥20.00</td>' in page
    assert '<td class="field-discount">¥5.00</td>' in page
    assert '<td class="field-pay">¥15.00</td>' in page


@pytest.mark.parametrize("value", ["abc", "１２", "9" * 40, "²"])
def test_a_bad_template_filter_value_is_the_admin_s_own_error_not_json(admin_site, value):
    from tests.support.factories import CouponTemplateFactory

    CouponTemplateFactory()  # a filter with nothing to list is not shown, nor applied
    response = admin_site.get(f"/admin/orders/order/?coupon_template={value}")

    assert response.status_code == 302
    assert response["Location"] == "/admin/orders/order/?e=1"
