from django.urls import path

from orders.api import views

urlpatterns = [
    path("products", views.ProductListView.as_view(), name="products"),
    path("orders", views.OrderListView.as_view(), name="orders"),
    # Before the <id> routes, so that it never reads as an order id.
    path("orders/coupon-options", views.CouponOptionsView.as_view(), name="order-coupon-options"),
    path("orders/<id:order_id>", views.OrderDetailView.as_view(), name="order"),
    path("orders/<id:order_id>/cancel", views.OrderCancelView.as_view(), name="order-cancel"),
    path("orders/<id:order_id>/pay", views.OrderPayView.as_view(), name="order-pay"),
]
