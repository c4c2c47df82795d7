"""The staff API (/api/admin/...): the same staff actions as the Django admin, asked of the same
permission table (backoffice/staff_actions.py) and recorded by the services they call."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from backoffice.api import campaigns, refund_views, template_views

# Paths as the API has always written them: no trailing slash, ids through api/converters.py.
router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("admin/coupons", template_views.AdminTemplateViewSet, basename="admin-coupon")
router.register("admin/campaigns", campaigns.AdminCampaignViewSet, basename="admin-campaign")
router.register("admin/orders", refund_views.AdminOrderViewSet, basename="admin-order")

urlpatterns = [path("", include(router.urls))]
