from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework_simplejwt.views import TokenObtainPairView, TokenRefreshView

from config.auth_views import me
from config.converters import IdConverter
from config.health import healthz

register_converter(IdConverter, "id")

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/auth/token", TokenObtainPairView.as_view(), name="token"),
    path("api/auth/token/refresh", TokenRefreshView.as_view(), name="token-refresh"),
    path("api/auth/me", me, name="me"),
    path("api/", include("coupons.api.urls")),
    path("api/", include("orders.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]

handler400 = "config.exceptions.json_bad_request"
handler404 = "config.exceptions.json_not_found"
handler500 = "config.exceptions.json_server_error"
