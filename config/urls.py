from django.contrib import admin
from django.urls import include, path, register_converter
from django.utils.translation import gettext_lazy
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework_simplejwt.views import TokenObtainPairView, TokenRefreshView

from config.auth_views import me
from config.converters import IdConverter
from config.health import healthz

register_converter(IdConverter, "id")

admin.site.site_header = gettext_lazy("Coupons administration")
admin.site.site_title = gettext_lazy("Coupons admin")
admin.site.site_url = "/api/docs/"  # "View site": the API is the site

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the admin's language switch
    path("api/auth/token", TokenObtainPairView.as_view(), name="token"),
    path("api/auth/token/refresh", TokenRefreshView.as_view(), name="token-refresh"),
    path("api/auth/me", me, name="me"),
    path("api/", include("coupons.api.urls")),
    path("api/", include("orders.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]

# JSON for the API, admin-styled pages under /admin/ (config/exceptions.py decides by path).
handler400 = "config.exceptions.bad_request"
handler403 = "config.exceptions.permission_denied"
handler404 = "config.exceptions.not_found"
handler500 = "config.exceptions.server_error"
