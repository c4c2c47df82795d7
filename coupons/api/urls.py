from django.urls import path

from coupons.api import admin_views

urlpatterns = [
    path("admin/coupons", admin_views.AdminTemplateListView.as_view(), name="admin-coupons"),
    path(
        "admin/coupons/<id:template_id>",
        admin_views.AdminTemplateDetailView.as_view(),
        name="admin-coupon",
    ),
]
