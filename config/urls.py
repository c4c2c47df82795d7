from django.conf import settings
from django.contrib import admin
from django.urls import include, path, register_converter
from django.utils.translation import gettext_lazy
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.admin_login import throttled_admin_login
from accounts.views import (
    LogoutView,
    RegisterView,
    TokenObtainView,
    TokenRefreshRotatingView,
    me,
)
from api.bare import bare
from api.converters import IdConverter
from backoffice.coupon_admin.dashboard import dashboard_view
from ops.favicon import favicon
from ops.health import healthz, livez
from ops.vitals import metrics

register_converter(IdConverter, "id")

admin.site.site_header = gettext_lazy("Coupons administration")
admin.site.site_title = gettext_lazy("Coupons admin")
admin.site.site_url = "/api/docs/"  # "View site": the API is the site

urlpatterns = [
    # The crowd's routes first: a path is tried against each pattern in turn.
    path("api/", include("coupons.api.urls")),
    path("api/auth/me", me, name="me"),
    path("healthz", healthz, name="healthz"),
    path("readyz", healthz, name="readyz"),
    path("livez", livez, name="livez"),
    path("metrics", metrics, name="metrics"),  # Bearer METRICS_TOKEN only (ops/vitals.py)
    path("favicon.ico", favicon),  # ops/favicon.py
    path("admin/login/", throttled_admin_login),  # before admin.site.urls: found first
    # The admin's home tab (SIMPLEUI_HOME_PAGE).
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="admin-dashboard"),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the admin's language switch
    path("api/auth/register", RegisterView.as_view(), name="register"),
    path("api/auth/token", TokenObtainView.as_view(), name="token"),
    path("api/auth/token/refresh", TokenRefreshRotatingView.as_view(), name="token-refresh"),
    path("api/auth/logout", LogoutView.as_view(), name="logout"),
    path("api/", include("orders.api.urls")),
    path("api/", include("backoffice.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]
if settings.BENCH_BARE_VIEW:  # the benchmark's ceiling row only (api/bare.py)
    urlpatterns.append(path("bench/bare", bare))

# JSON for the API, admin-styled pages under /admin/ (api/exceptions.py decides by path).
handler400 = "api.exceptions.bad_request"
handler403 = "api.exceptions.permission_denied"
handler404 = "api.exceptions.not_found"
handler500 = "api.exceptions.server_error"
