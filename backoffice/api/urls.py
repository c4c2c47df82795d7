"""The staff API (/api/admin/...): the same staff actions as the Django admin, asked of the same
permission table (backoffice/staff_actions.py) and recorded by the services they call."""

from django.urls import path

from backoffice.api import campaigns, refund_views, template_views

urlpatterns = [
    path("admin/coupons", template_views.AdminTemplateListView.as_view(), name="admin-coupons"),
    path(
        "admin/coupons/<id:template_id>",
        template_views.AdminTemplateDetailView.as_view(),
        name="admin-coupon",
    ),
    path(
        "admin/coupons/<id:template_id>/grants",
        template_views.AdminTemplateGrantView.as_view(),
        name="admin-coupon-grants",
    ),
    path(
        "admin/coupons/<id:template_id>/pause",
        template_views.AdminTemplatePauseView.as_view(),
        name="admin-coupon-pause",
    ),
    path(
        "admin/coupons/<id:template_id>/resume",
        template_views.AdminTemplateResumeView.as_view(),
        name="admin-coupon-resume",
    ),
    path(
        "admin/coupons/<id:template_id>/codes",
        template_views.AdminTemplateCodesView.as_view(),
        name="admin-coupon-codes",
    ),
    path(
        "admin/coupons/<id:template_id>/codes/import",
        template_views.AdminTemplateCodesImportView.as_view(),
        name="admin-coupon-codes-import",
    ),
    path("admin/campaigns", campaigns.AdminCampaignListView.as_view(), name="admin-campaigns"),
    path(
        "admin/campaigns/<id:campaign_id>",
        campaigns.AdminCampaignDetailView.as_view(),
        name="admin-campaign",
    ),
    path(
        "admin/orders/<id:order_id>/refund",
        refund_views.AdminOrderRefundView.as_view(),
        name="admin-order-refund",
    ),
]
