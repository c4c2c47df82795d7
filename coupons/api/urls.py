from django.urls import path

from coupons.api import admin_views, views
from coupons.campaigns import api as campaigns_api

urlpatterns = [
    path("coupons", views.CouponListView.as_view(), name="coupons"),
    path("coupons/mine", views.MyCouponListView.as_view(), name="my-coupons"),
    path("coupons/redeem", views.CouponRedeemView.as_view(), name="coupon-redeem"),
    path("coupons/<id:template_id>/claim", views.CouponClaimView.as_view(), name="coupon-claim"),
    path("admin/coupons", admin_views.AdminTemplateListView.as_view(), name="admin-coupons"),
    path(
        "admin/coupons/<id:template_id>",
        admin_views.AdminTemplateDetailView.as_view(),
        name="admin-coupon",
    ),
    path(
        "admin/coupons/<id:template_id>/grants",
        admin_views.AdminTemplateGrantView.as_view(),
        name="admin-coupon-grants",
    ),
    path(
        "admin/coupons/<id:template_id>/pause",
        admin_views.AdminTemplatePauseView.as_view(),
        name="admin-coupon-pause",
    ),
    path(
        "admin/coupons/<id:template_id>/resume",
        admin_views.AdminTemplateResumeView.as_view(),
        name="admin-coupon-resume",
    ),
    path(
        "admin/coupons/<id:template_id>/codes",
        admin_views.AdminTemplateCodesView.as_view(),
        name="admin-coupon-codes",
    ),
    path(
        "admin/coupons/<id:template_id>/codes/import",
        admin_views.AdminTemplateCodesImportView.as_view(),
        name="admin-coupon-codes-import",
    ),
    path("admin/campaigns", campaigns_api.AdminCampaignListView.as_view(), name="admin-campaigns"),
    path(
        "admin/campaigns/<id:campaign_id>",
        campaigns_api.AdminCampaignDetailView.as_view(),
        name="admin-campaign",
    ),
]
