"""The Django admin's login, behind the same login throttles as POST /api/auth/token."""

import math

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape

from api.throttles import login_wait

THROTTLED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Too many login attempts</title></head>
<body><h1>Too many login attempts</h1>
<p>Try again in {seconds} seconds.</p><p><a href="{path}">Back to the login page</a></p>
</body></html>"""


def throttled_admin_login(request: HttpRequest, extra_context=None) -> HttpResponse:
    """admin.site.login, with each POST counted per client IP and per username. Over the rate
    an admin-styled page (never raw JSON) with 429 and Retry-After."""
    if request.method == "POST":
        wait = login_wait(request, request.POST.get("username") or None)
        if wait is not None:
            seconds = max(1, math.ceil(wait))
            page = THROTTLED_PAGE.format(seconds=seconds, path=escape(request.path))
            response = HttpResponse(page, status=429)
            response["Retry-After"] = str(seconds)
            return response
    return admin.site.login(request, extra_context)
