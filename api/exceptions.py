"""The one place where errors become HTTP responses: `{"code", "detail"}` plus `"fields"`."""

import logging
import math
import sys

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.csrf import csrf_failure as django_csrf_failure
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from api.parsers import RequestTooLarge, too_large
from core.database_errors import database_unavailable, report_database_fault
from core.domain_errors import DomainError

logger = logging.getLogger(__name__)

# Domain error code -> HTTP status. Every code a service can raise must be listed here.
STATUS_BY_CODE = {
    "invalid": status.HTTP_400_BAD_REQUEST,
    "permission_denied": status.HTTP_403_FORBIDDEN,
    "coupon_not_allowed": status.HTTP_400_BAD_REQUEST,
    "not_found": status.HTTP_404_NOT_FOUND,
    "not_in_window": status.HTTP_409_CONFLICT,
    "sold_out": status.HTTP_409_CONFLICT,
    "limit_reached": status.HTTP_409_CONFLICT,
    "paused": status.HTTP_409_CONFLICT,
    "budget_exhausted": status.HTTP_409_CONFLICT,
    "not_eligible": status.HTTP_409_CONFLICT,
    "code_used": status.HTTP_409_CONFLICT,
    "coupon_used": status.HTTP_409_CONFLICT,
    "coupon_expired": status.HTTP_409_CONFLICT,
    "threshold_not_met": status.HTTP_409_CONFLICT,
    "coupon_not_applicable": status.HTTP_409_CONFLICT,
    "invalid_state": status.HTTP_409_CONFLICT,
    "amount_mismatch": status.HTTP_409_CONFLICT,
    "out_of_stock": status.HTTP_409_CONFLICT,
    "too_many_unpaid_orders": status.HTTP_409_CONFLICT,
    "request_in_progress": status.HTTP_409_CONFLICT,
    "codes_busy": status.HTTP_409_CONFLICT,
    "job_busy": status.HTTP_409_CONFLICT,
    "idempotency_key_reused": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "throttled": status.HTTP_429_TOO_MANY_REQUESTS,
}

# DRF exception class -> our code; the first match wins, so subclasses come first.
CODE_BY_API_EXCEPTION: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "authentication_failed"),
    (exceptions.PermissionDenied, "permission_denied"),
    (exceptions.NotFound, "not_found"),
    (exceptions.ValidationError, "invalid"),
    (exceptions.ParseError, "invalid"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.Throttled, "throttled"),
    (RequestTooLarge, "too_large"),
]

UNAVAILABLE_DETAIL = gettext_lazy("The service is temporarily unavailable. Retry shortly.")


def status_of_code(code: str) -> int:
    """The HTTP status an error code is answered with (for the schema's error responses)."""
    if code in STATUS_BY_CODE:
        return STATUS_BY_CODE[code]
    return next(cls.status_code for cls, c in CODE_BY_API_EXCEPTION if c == code)


def error_body(code: str, detail: str | Promise, fields: dict | None = None) -> dict:
    """`detail` is in the request's language (Accept-Language); `code` never changes."""
    body: dict[str, object] = {"code": code, "detail": str(detail)}
    if fields is not None:
        body["fields"] = fields
    return body


def api_exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER: render every error, including unexpected ones, as JSON."""
    set_rollback()
    view_name = context.get("view").__class__.__name__
    if isinstance(exc, DomainError):
        status_code = STATUS_BY_CODE.get(exc.code)
        if status_code is not None:
            headers = {}
            retry_after = getattr(exc, "retry_after", None)  # a throttle counted in a service
            if retry_after:
                headers["Retry-After"] = str(math.ceil(retry_after))
            return Response(
                error_body(exc.code, exc.detail, exc.fields), status=status_code, headers=headers
            )
        # A code nobody mapped is a bug in this code base, not the client's fault.
        logger.error("Unmapped domain error code %r in %s", exc.code, view_name, exc_info=exc)
        return server_error_response()
    if database_unavailable(exc):
        report_database_fault(exc, where=view_name)
        return unavailable_response(Response)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = too_large()
    if isinstance(exc, exceptions.APIException):
        return render_api_exception(exc)
    logger.exception("Unhandled error in %s", view_name)
    return server_error_response()


def server_error_response() -> Response:
    return Response(
        error_body("server_error", _("Internal server error.")),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Temporarily unavailable</title></head>
<body><h1>Temporarily unavailable</h1>
<p>The database cannot be reached. Try again in a few seconds.</p></body></html>"""


class EnvelopeResponse(JsonResponse):
    """The API's JSON envelope outside DRF, in UTF-8 as DRF writes it: Chinese as itself,
    never `\\u`-escaped."""

    def __init__(self, data, **kwargs):
        kwargs.setdefault("json_dumps_params", {"ensure_ascii": False})
        super().__init__(data, **kwargs)


def unavailable_response(
    response_class: type[HttpResponse] | type[Response] = EnvelopeResponse,
):
    """503 `unavailable` with Retry-After. Marked as logged: the fault reporter has
    written the one line this failure deserves, so django.request adds none per request."""
    body = error_body("unavailable", UNAVAILABLE_DETAIL)
    response = response_class(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return unavailable_marked(response)


def unavailable_for(request) -> HttpResponse:
    """The 503 outside DRF views: the JSON envelope for the API, a plain page for the Django
    admin and every other page (admin pages never answer raw JSON)."""
    if request.path.startswith("/api/"):
        return unavailable_response()
    page = HttpResponse(UNAVAILABLE_PAGE, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return unavailable_marked(page)


def unavailable_marked(response):
    response["Retry-After"] = str(settings.DATABASE_UNAVAILABLE_RETRY_AFTER)
    response._has_been_logged = True
    return response


def render_api_exception(exc: exceptions.APIException) -> Response:
    code = next((c for cls, c in CODE_BY_API_EXCEPTION if isinstance(exc, cls)), "error")
    headers = {}
    # Set by DRF's authentication (auth_header) and Throttled (wait) only.
    auth_header = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait = getattr(exc, "wait", None)
    if wait:
        headers["Retry-After"] = str(math.ceil(wait))
    if isinstance(exc, exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return Response(
            error_body(code, _("Invalid input."), fields), status=exc.status_code, headers=headers
        )
    detail = exc.detail
    if isinstance(detail, dict) and "detail" in detail:  # simplejwt puts a dict here
        detail = detail["detail"]
    return Response(error_body(code, str(detail)), status=exc.status_code, headers=headers)


def is_admin_request(request) -> bool:
    return request.path.startswith(reverse("admin:index"))


def admin_error_page(request, status_code: int, title: str, message: str) -> HttpResponse:
    """An error under /admin/ as an admin page (header, breadcrumbs, language), not JSON."""
    if not hasattr(request, "user"):
        # Refused before AuthenticationMiddleware ran (a Host we do not serve is refused by
        # CommonMiddleware): the admin's context asks who is signed in, so: nobody.
        request.user = AnonymousUser()
    try:
        context = {
            **admin.site.each_context(request),
            "title": title,
            "message": message,
            "status_code": status_code,
        }
        return render(request, "admin/error_page.html", context, status=status_code)
    except Exception:  # the page itself failed (for example no database): plain words then
        logger.exception("could not render the admin error page")
        return HttpResponse(format_html("<h1>{}</h1><p>{}</p>", title, message), status=status_code)


def admin_page_or_envelope(
    request, status_code: int, *, title: str, explanation: str, code: str, detail: str
) -> HttpResponse:
    """An error outside DRF views: an admin page (`title`, `explanation`) under /admin/, the
    API's JSON envelope (`code`, `detail`) everywhere else."""
    if is_admin_request(request):
        return admin_error_page(request, status_code, title, explanation)
    return EnvelopeResponse(error_body(code, detail), status=status_code)


def bad_request(request, exception=None) -> HttpResponse:
    """handler400: Django's SuspiciousOperation outside DRF views, for example a suspicious
    admin filter (DisallowedModelAdminLookup); an oversized body is 413."""
    if isinstance(exception, RequestDataTooBig):
        return request_too_large_response()
    return admin_page_or_envelope(
        request,
        400,
        title=_("Bad request"),
        explanation=_("The page was asked for with parameters it cannot use."),
        code="invalid",
        detail=_("Bad request."),
    )


def permission_denied(request, exception=None) -> HttpResponse:
    return admin_page_or_envelope(
        request,
        403,
        title=_("Not allowed"),
        explanation=_("Your account may not do this here."),
        code="permission_denied",
        detail=_("You do not have permission to perform this action."),
    )


def not_found(request, exception=None) -> HttpResponse:
    """handler404: unknown URLs answer in the same envelope as the API."""
    return admin_page_or_envelope(
        request,
        404,
        title=_("Not found"),
        explanation=_("There is nothing at this address."),
        code="not_found",
        detail=_("Not found."),
    )


def server_error(request) -> HttpResponse:
    """handler500: the last resort outside DRF views (the Django admin, middleware, health).
    Django calls it while handling the exception, so the exception is at hand: a database
    outage is a 503 there too. Under /admin/ the answer is an admin page, not JSON."""
    error = sys.exception()
    if error is not None and database_unavailable(error):
        report_database_fault(error, where=request.path)
        return unavailable_for(request)
    return admin_page_or_envelope(
        request,
        500,
        title=_("Server error"),
        explanation=_("Something went wrong on our side; nothing was changed. It has been logged."),
        code="server_error",
        detail=_("Internal server error."),
    )


def csrf_failure(request, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a JSON 403 for API clients and health checkers (the API itself
    authenticates with Bearer tokens, but a browser with a session cookie can still meet
    CSRF on a plain Django view such as /healthz); Django's own page for the admin."""
    if request.path.startswith("/api/") or request.path == reverse("healthz"):
        return EnvelopeResponse(
            error_body("permission_denied", _("CSRF verification failed. Request aborted.")),
            status=403,
        )
    return django_csrf_failure(request, reason=reason)


def request_too_large_response() -> JsonResponse:
    detail = str(too_large().detail)
    return EnvelopeResponse(error_body("too_large", detail), status=413)


def method_not_allowed_response(method: str, allowed: list[str]) -> JsonResponse:
    """405 in the envelope with the `Allow` header RFC 9110 asks for, for a view outside DRF
    (DRF's own 405 has both)."""
    detail = str(exceptions.MethodNotAllowed(method).detail)
    response = EnvelopeResponse(error_body("method_not_allowed", detail), status=405)
    response["Allow"] = ", ".join(allowed)
    return response
