"""Orders and products in the admin (SPEC section 17): staff cancel an order through the
orders service, stock adjustments need their permission, products show id and category,
categories have their own admin."""

import pytest
from django.contrib.admin.models import LogEntry

from coupons.issuing import service as issuing
from coupons.models import UserCoupon
from orders import services
from orders.models import Category, Order, Product
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import CouponTemplateFactory, ProductFactory

pytestmark = pytest.mark.django_db
ORDERS_URL = "/admin/orders/order/"


def pending_order_with_coupon(user, product):
    template = CouponTemplateFactory(value=500)
    coupon = issuing.coupon_claim(template_id=template.pk, user_id=user.pk)
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 2}], coupon_id=coupon.pk
    )
    return order, coupon


def test_staff_cancel_an_order_and_stock_and_coupon_come_back(admin_site, user, now):
    product = ProductFactory(stock=10)
    order, coupon = pending_order_with_coupon(user, product)
    paid = services.order_checkout(
        user_id=user.pk, items=[{"product_id": product.pk, "quantity": 1}]
    )
    services.order_pay(user_id=user.pk, order_id=paid.pk, amount=paid.pay_amount)

    chosen = {"action": "cancel_orders", "_selected_action": [order.pk, paid.pk]}
    asked = admin_site.post(ORDERS_URL, chosen)
    assert Order.objects.get(pk=order.pk).status == Order.Status.PENDING_PAYMENT  # not one click
    assert asked.status_code == 200 and 'id="cancel-confirmation"' in asked.content.decode()
    response = admin_site.post(ORDERS_URL, chosen | {"confirm": "1"}, follow=True)

    order.refresh_from_db()
    product.refresh_from_db()
    assert order.status == Order.Status.CANCELLED
    assert product.stock == 9  # 10 - 2 - 1 + 2: the paid order keeps its unit
    assert UserCoupon.objects.get(pk=coupon.pk).status == UserCoupon.Status.UNUSED
    messages = [str(message) for message in response.context["messages"]]
    assert messages == [
        "Cancelled 1 order: its stock returned; coupons returned: 1.",
        f"Not cancelled (only an order awaiting payment can be): #{paid.pk}.",
    ]
    assert Order.objects.get(pk=paid.pk).status == Order.Status.PAID
    assert LogEntry.objects.filter(object_id=str(order.pk)).count() == 1


def test_a_view_only_staff_member_cannot_cancel(client, user, now):
    product = ProductFactory(stock=10)
    order, _coupon = pending_order_with_coupon(user, product)
    client.force_login(staff_with(*VIEW_ONLY))

    listed = client.get(ORDERS_URL).content.decode()
    client.post(
        ORDERS_URL, {"action": "cancel_orders", "_selected_action": [order.pk], "confirm": "1"}
    )

    assert 'data-name="cancel_orders"' not in listed
    assert Order.objects.get(pk=order.pk).status == Order.Status.PENDING_PAYMENT
    assert Product.objects.get(pk=product.pk).stock == 8


def test_stock_adjustment_needs_its_own_permission(client):
    product = ProductFactory(stock=5, price=1000)
    editor = staff_with(*VIEW_ONLY, "orders.change_product")
    client.force_login(editor)
    url = f"/admin/orders/product/{product.pk}/change/"

    page = client.get(url).content.decode()
    response = client.post(url, {"name": "Renamed", "price": "10.00", "stock_change": "100"})

    assert "stock_change" not in page
    assert response.status_code == 302
    product.refresh_from_db()
    assert (product.name, product.stock) == ("Renamed", 5)

    editor.user_permissions.add(*staff_with("orders.adjust_stock").user_permissions.all())
    client.force_login(editor)
    assert "stock_change" in client.get(url).content.decode()
    client.post(url, {"name": "Renamed", "price": "10.00", "stock_change": "3"})
    assert Product.objects.get(pk=product.pk).stock == 8


def test_products_show_id_and_category_and_categories_have_an_admin(admin_site):
    tea = Category.objects.create(name="Tea")
    product = ProductFactory(name="Oolong", category=tea)

    listed = admin_site.get("/admin/orders/product/").content.decode()
    categories = admin_site.get("/admin/orders/category/?q=Te").content.decode()
    autocomplete = admin_site.get(
        "/admin/autocomplete/",
        {"app_label": "orders", "model_name": "product", "field_name": "category", "term": "te"},
    ).json()

    assert f'<th class="field-id"><a href="/admin/orders/product/{product.pk}/change/">' in listed
    assert '<td class="field-category nowrap">Tea</td>' in listed
    assert '<td class="field-product_count">1</td>' in categories
    assert autocomplete["results"] == [{"id": str(tea.pk), "text": "Tea"}]


def test_error_details_show_money_as_currency(shopper_client, user, now):
    product = ProductFactory(price=1500)
    template = CouponTemplateFactory(type="threshold", value=1000, min_amount=10000)
    coupon = issuing.coupon_claim(template_id=template.pk, user_id=user.pk)

    response = shopper_client.post(
        "/api/orders",
        {"items": [{"product_id": product.pk, "quantity": 1}], "coupon_id": coupon.pk},
        format="json",
    )

    assert response.json()["detail"] == (
        "The eligible subtotal ¥15.00 is ¥85.00 short of the threshold."
    )


def test_an_order_s_title_and_status_are_translated(admin_site, user, now):
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": ProductFactory().pk, "quantity": 1}]
    )

    page = admin_site.get(f"{ORDERS_URL}{order.pk}/change/", HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert f"订单 #{order.pk}（待支付）" in page.content.decode()


def test_cancelling_an_order_without_a_coupon_says_no_coupon_came_back(admin_site, user, now):
    """It said "stock and coupon returned" for an order that had none (issue 42, item 7)."""
    order = services.order_checkout(
        user_id=user.pk, items=[{"product_id": ProductFactory(stock=3).pk, "quantity": 1}]
    )

    response = admin_site.post(
        ORDERS_URL,
        {"action": "cancel_orders", "_selected_action": [order.pk], "confirm": "1"},
        follow=True,
    )

    messages = [str(message) for message in response.context["messages"]]
    assert messages == ["Cancelled 1 order: its stock returned; coupons returned: 0."]
    # the list shows what was refunded of each order (a column it lacked)
    assert "refunded amount" in admin_site.get(ORDERS_URL).content.decode().lower()
