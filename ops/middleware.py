"""Middleware of our own: cheap guards that hold for every path, the Django admin included."""

import ipaddress
import re

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.middleware.clickjacking import XFrameOptionsMiddleware

from api.exceptions import request_too_large_response, unavailable_for
from ops.database_faults import breaker
from ops.health import healthz, livez

# The probes: answered by address, never refused by the breaker, served by threads of their own.
PROBES = {"/healthz": healthz, "/readyz": healthz, "/livez": livez}


class RequestBodyLimitMiddleware:
    """413 `too_large` for a declared Content-Length over DATA_UPLOAD_MAX_MEMORY_SIZE (over
    STAFF_FILE_MAX_BYTES on the staff's file upload pages, STAFF_FILE_PATHS), before anything
    reads the body. Bodies without a Content-Length (chunked) are bounded where they are read:
    the API's BoundedJSONParser and Django's request.body (handler400 -> 413); a staff file by
    the service that reads it."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.staff_file_paths = re.compile(settings.STAFF_FILE_PATHS)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if self.staff_file_paths.match(request.path_info):
            limit = max(limit, settings.STAFF_FILE_MAX_BYTES)
        if declared > limit:
            return request_too_large_response()
        return self.get_response(request)


class HealthzByAddressMiddleware:
    """GET (or HEAD) of a probe (/healthz, /readyz, /livez) with a Host that is an IP address,
    port or not, is answered here, before CommonMiddleware checks ALLOWED_HOSTS: a load
    balancer probes each instance by its address (`Host: 10.0.0.5:8000`), which ALLOWED_HOSTS
    does not list and should not. The answer builds no link from the Host, so nothing in it
    can be poisoned; every other path, and a probe under a host name, still meets
    ALLOWED_HOSTS. Decision 0641."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path)
        if (
            probe is not None
            and request.method in ("GET", "HEAD")
            and host_is_an_address(request.META.get("HTTP_HOST", ""))
        ):
            return probe(request)
        return self.get_response(request)


def host_is_an_address(host: str) -> bool:
    """`10.0.0.5`, `10.0.0.5:8000`, `[::1]:8000`: an IP literal, as the Host header writes it."""
    name, _port = split_domain_port(host)  # Django's own reading of a Host
    try:
        ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    return True


class DatabaseBreakerMiddleware:
    """503 `unavailable` at once while ops.database_faults.breaker refuses (the database
    was just found away); the one request it lets through as a probe closes it by answering.
    The probes are not refused here either: readiness checks for itself, it is how
    recovery is seen."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path in PROBES:
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


# The headers a reverse proxy sets to say what the client asked for and who asked: Django reads
# the first three (SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST) when building absolute links,
# the throttles X-Forwarded-For (api.throttles.client_ip, with NUM_PROXIES; decision 0634).
FORWARDED_HEADERS = (
    "HTTP_X_REQUEST_ID",  # the proxy's id for the request (ops/vitals.py)
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PORT",
    "HTTP_X_FORWARDED_FOR",
)


class ForwardedHeadersFromProxiesMiddleware:
    """Drops the forwarded headers of a request that did not come from a proxy in
    TRUSTED_PROXIES, so a client that reaches the app directly cannot make it believe it was
    asked over https or for another host, or that it calls from another address (a fresh
    one per login guess). First in MIDDLEWARE: nothing reads them before."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.trusted = [ipaddress.ip_network(proxy) for proxy in settings.TRUSTED_PROXIES]

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.drop_untrusted(request)
        return self.get_response(request)

    def drop_untrusted(self, request: HttpRequest) -> None:
        if not self.from_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            for header in FORWARDED_HEADERS:
                request.META.pop(header, None)

    def from_trusted_proxy(self, address: str) -> bool:
        try:
            peer = ipaddress.ip_address(address)
        except ValueError:  # a unix socket, or no address at all
            return False
        return any(peer in network for network in self.trusted)


class FramesFromThisSiteOnlyMiddleware(XFrameOptionsMiddleware):
    """Django's clickjacking guard under a name of our own: simpleui removes Django's from
    MIDDLEWARE when it starts (its admin shows pages in frames), and X_FRAME_OPTIONS =
    SAMEORIGIN lets those frames, and no other site's, show our pages."""
