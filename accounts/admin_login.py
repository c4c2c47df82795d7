"""The Django admin's login, behind the same login throttles as POST /api/auth/token."""

import math

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape
from django.utils.translation import gettext as _

from accounts.throttles import login_attempt_of, username_as_the_admin_authenticates
from api.exceptions import admin_error_page

THROTTLED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Too many login attempts</title></head>
<body><h1>Too many login attempts</h1>
<p>Try again in {seconds} seconds.</p><p><a href="{path}">Back to the login page</a></p>
</body></html>"""


def throttled_admin_login(request: HttpRequest, extra_context=None) -> HttpResponse:
    """admin.site.login, with each failed POST counted as the API counts it (per username and
    client IP, per username, per client IP). Over a limit an admin-styled page (never raw
    JSON) with 429 and Retry-After."""
    if request.method != "POST":
        return admin.site.login(request, extra_context)
    usernames = request.POST.getlist("username")
    if len(usernames) > 1:  # a list, not a string: which one would be counted?
        return admin_error_page(
            request, 400, _("Bad request"), _("username: send one username, once.")
        )
    entered = username_as_the_admin_authenticates(usernames[0] if usernames else "")
    attempt = login_attempt_of(request, entered)
    if attempt.wait is not None:
        seconds = max(1, math.ceil(attempt.wait))
        page = THROTTLED_PAGE.format(seconds=seconds, path=escape(request.path))
        response = HttpResponse(page, status=429)
        response["Retry-After"] = str(seconds)
        return response
    user_before = request.user
    response = admin.site.login(request, extra_context)
    if request.user is not user_before:  # django.contrib.auth.login() put the new user there
        attempt.succeeded()
    return response
