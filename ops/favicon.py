"""/favicon.ico: what a browser asks of every page without a <link rel="icon"> (Swagger UI,
simpleui's frame). Sent on to the admin's icon, not a 404 in every page's console and log."""

from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static

ICON = "ops/favicon.png"


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    # Resolved per request: the static files' manifest exists only once collectstatic ran.
    return HttpResponsePermanentRedirect(static(ICON))
