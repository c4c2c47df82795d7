"""The one place where errors become HTTP responses: `{"code", "detail"}` plus `"fields"`."""

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from config.errors import DomainError

logger = logging.getLogger(__name__)

# Domain error code -> HTTP status. Every code a service can raise must be listed here.
STATUS_BY_CODE = {
    "invalid": status.HTTP_400_BAD_REQUEST,
    "coupon_not_allowed": status.HTTP_400_BAD_REQUEST,
    "not_found": status.HTTP_404_NOT_FOUND,
    "not_in_window": status.HTTP_409_CONFLICT,
    "sold_out": status.HTTP_409_CONFLICT,
    "limit_reached": status.HTTP_409_CONFLICT,
    "coupon_used": status.HTTP_409_CONFLICT,
    "coupon_expired": status.HTTP_409_CONFLICT,
    "threshold_not_met": status.HTTP_409_CONFLICT,
    "invalid_state": status.HTTP_409_CONFLICT,
    "amount_mismatch": status.HTTP_409_CONFLICT,
    "out_of_stock": status.HTTP_409_CONFLICT,
    "request_in_progress": status.HTTP_409_CONFLICT,
    "idempotency_key_reused": status.HTTP_422_UNPROCESSABLE_ENTITY,
}

# DRF exception class -> our code; the first match wins, so subclasses come first.
CODE_BY_API_EXCEPTION = [
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
]


def status_of_code(code: str) -> int:
    """The HTTP status an error code is answered with (for the schema's error responses)."""
    if code in STATUS_BY_CODE:
        return STATUS_BY_CODE[code]
    return next(cls.status_code for cls, c in CODE_BY_API_EXCEPTION if c == code)


def error_body(code: str, detail: str, fields: dict | None = None) -> dict:
    body = {"code": code, "detail": detail}
    if fields is not None:
        body["fields"] = fields
    return body


def api_exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER: render every error, including unexpected ones, as JSON."""
    set_rollback()
    if isinstance(exc, DomainError):
        status_code = STATUS_BY_CODE.get(exc.code, status.HTTP_400_BAD_REQUEST)
        return Response(error_body(exc.code, exc.detail, exc.fields), status=status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        return render_api_exception(exc)
    logger.exception("Unhandled error in %s", context.get("view").__class__.__name__)
    return Response(
        error_body("server_error", "Internal server error."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def render_api_exception(exc: exceptions.APIException) -> Response:
    code = next((c for cls, c in CODE_BY_API_EXCEPTION if isinstance(exc, cls)), "error")
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    if isinstance(exc, exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return Response(
            error_body(code, "Invalid input.", fields), status=exc.status_code, headers=headers
        )
    detail = exc.detail
    if isinstance(detail, dict):  # simplejwt puts a dict here
        detail = detail.get("detail", str(detail))
    return Response(error_body(code, str(detail)), status=exc.status_code, headers=headers)


def json_not_found(request, exception=None) -> JsonResponse:
    """handler404: unknown URLs answer in the same envelope as the API."""
    return JsonResponse(error_body("not_found", "Not found."), status=404)


def json_server_error(request) -> JsonResponse:
    """handler500: the last resort outside DRF views."""
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)


def json_bad_request(request, exception=None) -> JsonResponse:
    return JsonResponse(error_body("invalid", "Bad request."), status=400)
