from django.urls import include, path
from rest_framework.routers import SimpleRouter

from coupons.api import views

# Paths as the API has always written them: no trailing slash, ids through api/converters.py.
router = SimpleRouter(trailing_slash=False, use_regex_path=False)
# The crowd's routes first: a path is tried against each pattern in turn (the list, then the
# claim's fallback when its lean route leaves it to the stack).
router.register("coupons", views.CouponTemplateViewSet, basename="coupon")
router.register("coupons/mine", views.MyCouponViewSet, basename="my-coupon")

urlpatterns = [path("", include(router.urls))]
