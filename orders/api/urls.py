from django.urls import include, path
from rest_framework.routers import SimpleRouter

from orders.api import views

# Paths as the API has always written them: no trailing slash, ids through api/converters.py.
# The router puts the coupon advisor (`coupon-options`) before the routes of one order.
router = SimpleRouter(trailing_slash=False, use_regex_path=False)
router.register("products", views.ProductViewSet, basename="product")
router.register("orders", views.OrderViewSet, basename="order")

urlpatterns = [path("", include(router.urls))]
