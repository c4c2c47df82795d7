"""The claim's lean route (decision 1027, SPEC section 36): POST /api/coupons/{id}/claim with a
Bearer token and nothing else to read is answered here, in front of Django's handler, URL
resolution and DRF's dispatch, which cost a warm refusal more than the refusal itself.

It is the same claim (`issuing.coupon_claim`, as CouponTemplateViewSet's `claim` action, its
documented twin, calls it), answered through the same pieces: the forwarded headers, the
request id and metrics (ops), the API stack's middleware's own checks and headers (security,
language, host, frames), the token check, the exception handler and renderer. Anything it
does not take as it stands goes to the API stack untouched, before anything is counted:
another method or path, an Idempotency-Key, a body, an Accept other than JSON, a token that
does not validate, a Host we do not serve, a redirect to https, the database breaker not
closed. A refusal that says only its class's message is answered, after the first of its
class, language and scheme, with that first answer as the server was handed it (decision 1035).
tests/config/test_api_handler.py sends each request both ways and compares the answers byte
for byte."""

import logging
import re
import time
from dataclasses import dataclass

from django.core import signals
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponse, HttpResponseBase
from django.middleware.common import CommonMiddleware
from django.middleware.locale import LocaleMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import resolve, set_script_prefix
from django.utils import translation
from django.utils.log import log_response, request_logger
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework_simplejwt.exceptions import InvalidToken, TokenError

from accounts.authentication import TokenBearer, token_user_id
from api.converters import IdConverter
from api.exceptions import api_exception_handler
from api.idempotency import KEY_HEADER
from core import clock
from core.domain_errors import DomainError
from coupons import issuing
from coupons.api.claim_authentication import ClaimAuthentication
from coupons.api.serializers import user_coupon_data
from coupons.models import UserCoupon
from ops.database_faults import breaker
from ops.log_filters import request_id
from ops.middleware import ForwardedHeadersFromProxiesMiddleware, FramesFromThisSiteOnlyMiddleware
from ops.vitals import REQUEST_ID_HEADER, answer_counted, request_id_of

PREFIX, SUFFIX = "/api/coupons/", "/claim"
ID_PATTERN = re.compile(IdConverter.regex)  # the route's own converter
IDEMPOTENCY_KEY_META = "HTTP_" + KEY_HEADER.upper().replace("-", "_")
# Accept headers that choose JSON as DRF's negotiation would (absent: any).
JSON_ACCEPTED = frozenset({"", "*/*", "application/json"})


def claim_path(path_info: str) -> bool:
    return path_info.startswith(PREFIX) and path_info.endswith(SUFFIX)


def action_view(view_function):
    """The viewset the stack would serve this routed view function's POST with, as DRF's
    ViewSetMixin.as_view builds it: each HTTP method bound to its action."""
    view = view_function.cls(**view_function.initkwargs)
    view.action_map = view_function.actions
    for method, action_name in view.action_map.items():
        setattr(view, method, getattr(view, action_name))
    view.action = view.action_map["post"]
    return view


@dataclass(frozen=True)
class KeptAnswer:
    """A refusal's whole answer as the server was handed it, the middleware's headers in it,
    but for its request id."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    content: bytes

    def response(self) -> HttpResponse:
        """As a response, for the log line."""
        return HttpResponse(self.content, status=self.status)


class ClaimRoute:
    """A WSGI application for the claim; `fallback` (the API stack) answers what it leaves."""

    def __init__(self, fallback) -> None:
        self.fallback = fallback

        def unused(request):  # the middleware's own chain is never called from here
            raise AssertionError("ClaimRoute calls only process_request and process_response")

        self.forwarded = ForwardedHeadersFromProxiesMiddleware(unused)
        self.security = SecurityMiddleware(unused)
        self.locale = LocaleMiddleware(unused)
        self.common = CommonMiddleware(unused)
        self.frames = FramesFromThisSiteOnlyMiddleware(unused)
        self.authentication = ClaimAuthentication()
        match = resolve(f"{PREFIX}1{SUFFIX}")
        self.view = action_view(match.func)
        self.allowed = ", ".join(self.view.allowed_methods)
        self.route = match.route
        self.renderer = JSONRenderer()
        # By class, language and scheme: nothing else of the request is in a refusal's answer.
        self.refusals: dict[tuple[type, str, bool], KeptAnswer] = {}

    def __call__(self, environ, start_response):
        template_id = self._template_id(environ)
        token = None if template_id is None else self._token(environ)
        if token is None:
            return self.fallback(environ, start_response)
        request = WSGIRequest(environ)
        self.forwarded.drop_untrusted(request)
        if not self._taken_as_it_stands(request):
            return self.fallback(environ, start_response)
        set_script_prefix(environ.get("SCRIPT_NAME", ""))
        signals.request_started.send(sender=self.__class__, environ=environ)
        started = time.perf_counter()
        current = request_id_of(request)
        context_token = request_id.set(current)
        kept = None
        try:
            self.locale.process_request(request)
            outcome = self._claim(template_id, token)
            keep_as = self._refusal_key(outcome, request)
            kept = self.refusals.get(keep_as) if keep_as else None
            if kept is None:
                response = self._response(request, outcome)
            elif request_logger.isEnabledFor(logging.WARNING):  # as Django logs a 4xx
                log_response("%s: %s", kept.reason, request.path, response=kept.response())
        finally:
            request_id.reset(context_token)
        if kept is not None:
            return self._kept_started(
                request, kept, request_id=current, started=started, respond=start_response
            )
        response = self.frames.process_response(request, response)
        response = self.common.process_response(request, response)
        response = self.locale.process_response(request, response)
        response = self.security.process_response(request, response)
        answer_counted(request.method, response.status_code, route=self.route, started=started)
        # A refusal is a 4xx; a 5xx (an unmapped error) is logged as an error each time, and a
        # cookie is the request's own.
        if keep_as and response.status_code < 500 and not response.cookies:
            self.refusals[keep_as] = KeptAnswer(
                response.status_code,
                response.reason_phrase,
                list(response.items()),
                response.content,
            )
        response[REQUEST_ID_HEADER] = current
        return self._started(request, response, start_response)

    def _template_id(self, environ) -> int | None:
        """The template of a claim this route may take, None for anything else."""
        path_info = environ.get("PATH_INFO", "")
        if not (environ.get("REQUEST_METHOD") == "POST" and claim_path(path_info)):
            return None
        if environ.get(IDEMPOTENCY_KEY_META) is not None or environ.get("HTTP_TRANSFER_ENCODING"):
            return None
        if environ.get("CONTENT_LENGTH", "") not in ("", "0"):
            return None
        if environ.get("HTTP_ACCEPT", "") not in JSON_ACCEPTED or not breaker.is_closed():
            return None
        digits = path_info[len(PREFIX) : -len(SUFFIX)]
        return int(digits) if ID_PATTERN.fullmatch(digits) else None

    def _token(self, environ):
        """The Bearer token, validated (signature, expiry, user claim), or None."""
        header = environ.get("HTTP_AUTHORIZATION", "").encode("iso-8859-1")
        raw_token = self.authentication.get_raw_token(header) if header else None
        if raw_token is None:
            return None
        try:
            token = self.authentication.get_validated_token(raw_token)
            token_user_id(token)
        except (InvalidToken, TokenError, exceptions.AuthenticationFailed):
            return None
        return token

    def _taken_as_it_stands(self, request) -> bool:
        """The security and common middleware's checks pass with no answer of their own."""
        try:
            return (
                self.security.process_request(request) is None
                and self.common.process_request(request) is None
            )
        except DisallowedHost:
            return False

    def _claim(self, template_id: int, token) -> UserCoupon | Exception:
        """The claimed coupon, or what refused it."""
        user_id = token_user_id(token)
        try:
            return issuing.coupon_claim(
                template_id=template_id,
                user_id=user_id,
                bearer=TokenBearer(token=token, user_id=user_id),
                effect_record=None,
            )
        except Exception as error:
            return error

    def _refusal_key(
        self, outcome: UserCoupon | Exception, request
    ) -> tuple[type, str, bool] | None:
        """Where a refusal that says only its class's message (sold out, limit reached...) is
        kept: its answer is the same for every request of its language and scheme. None for
        anything else (a coupon, a refusal with fields, Retry-After or its own text)."""
        if not (
            isinstance(outcome, DomainError)
            and outcome.detail is type(outcome).default_detail
            and outcome.fields is None
            and not getattr(outcome, "retry_after", None)
        ):
            return None
        return (type(outcome), translation.get_language(), request.is_secure())

    def _response(self, request, outcome: UserCoupon | Exception) -> HttpResponseBase:
        """The answer rendered as the view would, before the middleware's response steps."""
        if not isinstance(outcome, Exception):
            return self._rendered(Response(user_coupon_data(outcome, now=clock.now()), status=201))
        if isinstance(outcome, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            outcome.auth_header = self.authentication.authenticate_header(request)  # type: ignore[union-attr]
        response = self._rendered(
            api_exception_handler(outcome, {"view": self.view, "request": request})
        )
        if response.status_code >= 400:  # as Django's handler logs it (django.request)
            log_response("%s: %s", response.reason_phrase, request.path, response=response)
        return response

    def _rendered(self, response: Response) -> Response:
        response.accepted_renderer = self.renderer
        response.accepted_media_type = self.renderer.media_type
        response.renderer_context = {}  # type: ignore[attr-defined]
        response["Allow"] = self.allowed
        response.render()
        return response

    def _kept_started(
        self, request, kept: KeptAnswer, *, request_id: str, started: float, respond
    ) -> list[bytes]:
        """A kept refusal handed to the server: counted, with this request's id; the request
        ends here (Django's request_finished, as a response's close sends it)."""
        answer_counted(request.method, kept.status, route=self.route, started=started)
        respond(f"{kept.status} {kept.reason}", [*kept.headers, (REQUEST_ID_HEADER, request_id)])
        signals.request_finished.send(sender=self.__class__)
        return [kept.content]

    def _started(self, request, response, start_response):
        """As Django's WSGIHandler hands an answer to the server."""
        response._handler_class = self.__class__
        response._resource_closers.append(request.close)
        headers = [
            *response.items(),
            *(("Set-Cookie", cookie.output(header="")) for cookie in response.cookies.values()),
        ]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return response
