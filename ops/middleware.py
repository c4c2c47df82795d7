"""Middleware of our own: cheap guards that hold for every path, the Django admin included."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.exceptions import request_too_large_response, unavailable_for
from ops.database_faults import breaker


class RequestBodyLimitMiddleware:
    """413 `too_large` for a declared Content-Length over DATA_UPLOAD_MAX_MEMORY_SIZE, before
    anything reads the body. Bodies without a Content-Length (chunked) are bounded where they
    are read: the API's BoundedJSONParser and Django's request.body (handler400 -> 413)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return request_too_large_response()
        return self.get_response(request)


class DatabaseBreakerMiddleware:
    """503 `unavailable` at once while ops.database_faults.breaker refuses (the database
    was just found away); the one request it lets through as a probe closes it by answering.
    /healthz still checks for itself: it is how recovery is seen."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/healthz":
            return self.get_response(request)
        admitted = breaker.admit()
        if admitted is False:
            return unavailable_for(request)
        if admitted is True:
            return self.get_response(request)
        try:  # the probe
            return self.get_response(request)
        finally:
            breaker.probe_done()
