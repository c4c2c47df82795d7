"""The app's WSGI handlers: the API served through the middleware it needs, everything else
through the whole stack (decision 1027).

The shopper's requests (a claim, the coupon list, auth/me) are the crowd's, and every
middleware is a call per request: the session, CSRF, authentication and messages middleware
serve the admin's cookies, WhiteNoise serves /static/, the probes by address serve /healthz;
no API view reads any of them (its views are DRF's: CSRF-exempt, authenticated by their own
Bearer check). API_MIDDLEWARE (settings) keeps the rest in the same order, so an API answer
is the same byte for byte either way (tests/config/test_api_handler.py sends both)."""

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import URLResolver, path
from django.urls.resolvers import RegexPattern

from api.bare import bare
from api.wsgi_body import body_in_one_part
from coupons.api.claim_route import ClaimRoute, claim_path

# Under /api/ but served by the whole stack: the schema and its Swagger page are pages for a
# browser (static files, the admin's language cookie).
FULL_STACK_API_PATHS = ("/api/docs/", "/api/schema/")
# The bench's empty-view row (BENCH_BARE_VIEW only): api/bare.py with no middleware at all.
EMPTY_VIEW_PATH = "/bench/empty"


def serves_on_the_api_stack(path_info: str) -> bool:
    return path_info.startswith("/api/") and not path_info.startswith(FULL_STACK_API_PATHS)


class ChainHandler(WSGIHandler):
    """Django's WSGI handler with its own list of middleware for its chain."""

    def __init__(self, middleware: list[str]) -> None:
        self.middleware = middleware
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds the chain from settings.MIDDLEWARE alone; this runs once, as the
        # handler is made, before any request thread exists.
        whole = settings.MIDDLEWARE
        settings.MIDDLEWARE = self.middleware
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = whole


class EmptyViewHandler(ChainHandler):
    """The bench's ceiling: DRF's empty view, no middleware, a urlconf of that one route."""

    resolver = URLResolver(RegexPattern(r"^/"), [path(EMPTY_VIEW_PATH.lstrip("/"), bare)])

    def __init__(self) -> None:
        super().__init__(middleware=[])

    def resolve_request(self, request):
        match = self.resolver.resolve(request.path_info)
        request.resolver_match = match
        return match


class RoutedApplication:
    """The WSGI application: /api/ (but the schema pages) to the API's chain, the rest to the
    whole one; a body that is not streamed handed to the server in one part."""

    def __init__(self) -> None:
        self.whole_stack = WSGIHandler()
        self.api_stack = ChainHandler(middleware=settings.API_MIDDLEWARE)
        self.claim_route = ClaimRoute(fallback=self.api_stack)
        self.empty_view = EmptyViewHandler() if settings.BENCH_BARE_VIEW else None

    def __call__(self, environ, start_response):
        return body_in_one_part(self._routed(environ, start_response))

    def _routed(self, environ, start_response):
        path_info = environ.get("PATH_INFO", "")
        if claim_path(path_info):
            return self.claim_route(environ, start_response)
        if serves_on_the_api_stack(path_info):
            return self.api_stack(environ, start_response)
        if self.empty_view is not None and path_info == EMPTY_VIEW_PATH:
            return self.empty_view(environ, start_response)
        return self.whole_stack(environ, start_response)
