"""The API's own middleware chain and the claim's lean route (config/handlers.py,
coupons/api/claim_route.py, decision 1027): every request sent to the whole stack, the API
stack and (a claim) the lean route gets the same answer, status, headers and body byte for
byte (the request id, new for each answer, aside), and the chain leaves out only what no API
view uses."""

import io
import json
import logging
import re
import wsgiref.util
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView
from rest_framework_simplejwt.tokens import AccessToken

from config.handlers import RoutedApplication, serves_on_the_api_stack
from core import clock
from core.domain_errors import DomainError
from coupons.api.claim_route import claim_path
from coupons.models import CouponTemplate
from ops.database_faults import breaker
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory
from tests.support.helpers import claim_url
from tests.support.metrics import scrape

pytestmark = pytest.mark.django_db

LEFT_OUT = {
    "ops.middleware.HealthzByAddressMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
}
REQUEST_ID = re.compile(r"[0-9a-f]{32}")


@contextmanager
def connection_kept_across_requests():
    """As Django's test client does: a request's end closes no connection, so the test's
    transaction lives on across the calls."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def served(handler, method: str, path: str, body: bytes = b"", **headers) -> tuple:
    """Call a WSGI handler as a server does: (status line, headers, body)."""
    environ: dict = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path.split("?")[0],
        "QUERY_STRING": path.partition("?")[2],
        "HTTP_HOST": "localhost",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        **headers,
    }
    wsgiref.util.setup_testing_defaults(environ)
    started: dict = {}

    def start_response(status, response_headers, exc_info=None):
        started["status"], started["headers"] = status, response_headers

    with connection_kept_across_requests():
        parts = handler(environ, start_response)
        content = b"".join(parts)
        getattr(parts, "close", lambda: None)()  # as a server does: the request ends
    return started["status"], started["headers"], content


def answer_of(handler, method: str, path: str, body: bytes = b"", **headers) -> tuple:
    """`served`, the headers sorted and without the request id (new for each answer)."""
    status, response_headers, content = served(handler, method, path, body, **headers)
    request_ids = [value for name, value in response_headers if name == "X-Request-ID"]
    assert len(request_ids) == 1 and REQUEST_ID.fullmatch(request_ids[0])
    others = sorted((name, value) for name, value in response_headers if name != "X-Request-ID")
    return status, others, content


@pytest.fixture
def app():
    return RoutedApplication()


def bearer(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {AccessToken.for_user(user)}"}


def both_ways(app, method: str, path: str, body: bytes = b"", **headers) -> tuple:
    """The answer through the API stack and the claim route, each held equal to the whole
    stack's."""
    assert serves_on_the_api_stack(path.split("?")[0])
    whole = answer_of(app.whole_stack, method, path, body, **headers)
    lean = answer_of(app.api_stack, method, path, body, **headers)
    assert lean == whole
    if claim_path(path.split("?")[0]):
        assert answer_of(app.claim_route, method, path, body, **headers) == whole
    return lean


def test_the_api_chain_is_the_whole_chain_in_order_without_what_serves_only_pages():
    assert settings.API_MIDDLEWARE == [m for m in settings.MIDDLEWARE if m not in LEFT_OUT]


def api_views(resolver: URLResolver, prefix: str = "/") -> list[tuple[str, object]]:
    found = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += api_views(pattern, route)
        elif isinstance(pattern, URLPattern) and serves_on_the_api_stack(route):
            found.append((route, pattern.callback))
    return found


def test_every_view_on_the_api_stack_is_drf_s_so_none_needs_sessions_csrf_or_the_user():
    views = api_views(get_resolver())
    assert len(views) > 20
    not_drf = [route for route, view in views if not issubclass(view.cls, APIView)]
    assert not_drf == []


def test_a_claim_answers_the_same_either_way(app, frozen_now):
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    open_one = CouponTemplateFactory(total=100, per_user_limit=1)
    shopper, first, second, third = UserFactory(), UserFactory(), UserFactory(), UserFactory()
    UserCouponFactory(template=open_one, user=shopper)

    status, _, body = both_ways(app, "POST", claim_url(sold_out), **bearer(shopper))
    assert status.startswith("409") and b'"sold_out"' in body
    status, _, body = both_ways(app, "POST", claim_url(open_one), **bearer(shopper))
    assert status.startswith("409") and b'"limit_reached"' in body
    chinese = {"HTTP_ACCEPT_LANGUAGE": "zh-hans", **bearer(shopper)}
    status, headers, _ = both_ways(app, "POST", claim_url(sold_out), **chinese)
    assert ("Content-Language", "zh-hans") in headers

    # A win each way, by three users: the same answer but the coupon's own id, user and clock.
    ways = ((app.whole_stack, first), (app.api_stack, second), (app.claim_route, third))
    won = [
        answer_of(handler, "POST", claim_url(open_one), **bearer(user)) for handler, user in ways
    ]
    assert won[0][0].startswith("201")
    for _, headers, body in won:  # the ids may have more digits one way than another
        assert ("Content-Length", str(len(body))) in headers
    heads = [
        (status, [h for h in headers if h[0] != "Content-Length"]) for status, headers, _ in won
    ]
    assert heads == [heads[0]] * 3
    bodies = [json.loads(body) for _, _, body in won]
    assert [body.pop("user_id") for body in bodies] == [first.pk, second.pk, third.pk]
    assert len({body.pop("id") for body in bodies}) == 3
    for body in bodies:  # written by the database's clock, not the frozen one
        del body["created_at"], body["updated_at"]
    assert bodies[2] == bodies[1] == bodies[0]


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("POST", "/api/coupons/999999/claim", "bearer", "404"),
        ("POST", "/api/coupons/1/claim", {}, "401"),
        ("POST", "/api/coupons/1/claim", {"HTTP_AUTHORIZATION": "Bearer nonsense"}, "401"),
        ("GET", "/api/coupons/1/claim", "bearer", "405"),
        ("POST", "/api/coupons/1/claim", {"HTTP_ACCEPT": "text/html", "bearer": 1}, "406"),
        ("POST", "/api/coupons/1/claim", {"CONTENT_LENGTH": str(2**30), "bearer": 1}, "413"),
        ("GET", "/api/coupons", "bearer", "200"),
        ("GET", "/api/coupons?page=2", "bearer", "200"),
        ("GET", "/api/coupons/mine?status=unused", "bearer", "200"),
        ("GET", "/api/coupons/mine?status=nonsense", "bearer", "400"),
        ("GET", "/api/auth/me", "bearer", "200"),
        ("GET", "/api/auth/me/", "bearer", "404"),
        ("GET", "/api/orders", "bearer", "200"),
        ("GET", "/api/nowhere", {}, "404"),
        ("GET", "/api/coupons", {"HTTP_HOST": "evil.example", "bearer": 1}, "400"),
        ("OPTIONS", "/api/coupons", "bearer", "200"),
    ],
)
def test_the_crowd_s_and_other_api_requests_answer_the_same_either_way(
    app, method, path, headers, status
):
    CouponTemplateFactory.create_batch(3)
    user = UserFactory()
    given = {} if headers == "bearer" else dict(headers)
    if headers == "bearer" or given.pop("bearer", None):
        given.update(bearer(user))
    answered, _, _ = both_ways(app, method, path, **given)
    assert answered.startswith(status)


def test_a_claim_answers_the_same_while_the_database_breaker_is_open(app):
    user = UserFactory()
    breaker.trip()
    answered, _, body = both_ways(app, "POST", "/api/coupons/1/claim", **bearer(user))
    assert answered.startswith("503") and b'"unavailable"' in body


def test_the_schema_pages_and_everything_else_are_served_by_the_whole_stack():
    assert not serves_on_the_api_stack("/api/docs/")
    assert not serves_on_the_api_stack("/api/schema/")
    assert not serves_on_the_api_stack("/admin/")
    assert not serves_on_the_api_stack("/healthz")
    assert serves_on_the_api_stack("/api/coupons/1/claim")


class FallbackCalled(Exception):
    pass


@pytest.fixture
def lean_only(app):
    """The claim route with no API stack behind it: what it does not take raises."""

    def fallback(environ, start_response):
        raise FallbackCalled(environ["PATH_INFO"])

    app.claim_route.fallback = fallback
    return app.claim_route


def test_the_lean_route_answers_claims_itself(lean_only):
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    open_one = CouponTemplateFactory()
    user = UserFactory()

    answers = [
        answer_of(lean_only, "POST", claim_url(template), **headers, **bearer(user))[0]
        for template, headers in (
            (sold_out, {}),
            (open_one, {"HTTP_ACCEPT": "*/*"}),
            (open_one, {"HTTP_ACCEPT": "application/json", "HTTP_ACCEPT_LANGUAGE": "zh-hans"}),
        )
    ]
    answers.append(answer_of(lean_only, "POST", "/api/coupons/999999/claim", **bearer(user))[0])
    assert [answer[:3] for answer in answers] == ["409", "201", "409", "404"]


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/api/coupons/1/claim", {}),
        ("POST", "/api/coupons/1/claim", {"HTTP_IDEMPOTENCY_KEY": "a-key-of-mine"}),
        ("POST", "/api/coupons/1/claim", {"HTTP_AUTHORIZATION": "Bearer nonsense"}),
        ("POST", "/api/coupons/1/claim", {"HTTP_AUTHORIZATION": ""}),
        ("POST", "/api/coupons/1/claim", {"HTTP_ACCEPT": "text/html"}),
        ("POST", "/api/coupons/1/claim", {"CONTENT_LENGTH": "2"}),
        ("POST", "/api/coupons/1/claim", {"HTTP_HOST": "evil.example"}),
        ("POST", "/api/coupons/01x/claim", {}),
        ("POST", "/api/coupons/" + "9" * 30 + "/claim", {}),
    ],
)
def test_what_the_lean_route_does_not_take_goes_to_the_api_stack(lean_only, method, path, headers):
    given = {**bearer(UserFactory()), **headers}
    with pytest.raises(FallbackCalled):
        answer_of(lean_only, method, path, **given)


def test_while_the_database_breaker_is_not_closed_claims_go_to_the_api_stack(lean_only):
    breaker.trip()
    with pytest.raises(FallbackCalled):
        answer_of(lean_only, "POST", "/api/coupons/1/claim", **bearer(UserFactory()))


def test_the_lean_route_s_answers_are_counted_as_the_stack_s(lean_only, settings):
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    route = "api/coupons/<id:template_id>/claim"
    key = ("coupons_http_requests_total", (("method", "POST"), ("route", route), ("status", "409")))

    def sold_out_claims(samples: dict) -> float:
        return sum(
            value
            for (name, labels), value in samples.items()
            if name == "coupons_claims_total" and ("outcome", "sold_out") in labels
        )

    before = scrape(settings)
    answer_of(lean_only, "POST", claim_url(sold_out), **bearer(UserFactory()))
    after = scrape(settings)

    assert after[key] - before.get(key, 0) == 1
    assert sold_out_claims(after) - sold_out_claims(before) == 1


@pytest.mark.servers
def test_a_claim_answers_the_same_either_way_while_redis_is_down(app, own_redis, frozen_now):
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    shopper = UserFactory()
    own_redis.stop()

    status, _, body = both_ways(app, "POST", claim_url(sold_out), **bearer(shopper))

    assert status.startswith("409") and b'"sold_out"' in body  # the database decided


def test_each_refusal_the_route_keeps_answers_the_same_the_first_time_and_after(settings):
    """The claim route keeps a refusal's whole answer, the middleware's headers in it, per
    class, language and scheme (decision 1035): the copy it answers with the second time is
    the answer the whole stack gives, in each language, over http and https."""
    settings.SECURE_HSTS_SECONDS = 3600  # so that an answer over https has a header of its own
    app = RoutedApplication()
    now = clock.now()
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    held = CouponTemplateFactory(total=100, per_user_limit=1)
    not_yet = CouponTemplateFactory(valid_from=now + timedelta(days=1))
    paused = CouponTemplateFactory(paused_at=now)
    hidden = CouponTemplateFactory(visibility=CouponTemplate.Visibility.HIDDEN)
    shopper = UserFactory()
    UserCouponFactory(template=held, user=shopper)

    answered = []
    for scheme in ("http", "https"):
        for language in ("en", "zh-hans"):
            asked = {"HTTP_ACCEPT_LANGUAGE": language, "wsgi.url_scheme": scheme, **bearer(shopper)}
            for template in (sold_out, held, not_yet, paused, hidden):
                whole = answer_of(app.whole_stack, "POST", claim_url(template), **asked)
                first = answer_of(app.claim_route, "POST", claim_url(template), **asked)
                again = answer_of(app.claim_route, "POST", claim_url(template), **asked)
                assert first == again == whole
                assert ("Content-Language", language) in whole[1]
                hsts = [value for name, value in whole[1] if name == "Strict-Transport-Security"]
                assert hsts == (["max-age=3600"] if scheme == "https" else [])
                answered.append((whole[0][:3], json.loads(whole[2])["code"]))

    assert answered == 4 * [
        ("409", "sold_out"),
        ("409", "limit_reached"),
        ("409", "not_in_window"),
        ("409", "paused"),
        ("404", "not_found"),
    ]


def test_a_kept_refusal_is_another_request_s_answer_with_its_own_id(settings):
    """Two requests of one key that differ in all else (template, user, Host, a proxy's
    request id): the second, answered from the kept copy, is what the whole stack answers it,
    and carries its own request id."""
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    app = RoutedApplication()
    first, second = CouponTemplateFactory(total=1), CouponTemplateFactory(total=1)
    UserCouponFactory(template=first)
    UserCouponFactory(template=second)
    asked = [
        (first, {"HTTP_HOST": "localhost", **bearer(UserFactory())}),
        (
            second,
            {
                "HTTP_HOST": "testserver",
                "REMOTE_ADDR": "10.1.2.3",
                "HTTP_X_REQUEST_ID": "f" * 32,
                **bearer(UserFactory()),
            },
        ),
    ]
    for template, headers in asked:
        whole = answer_of(app.whole_stack, "POST", claim_url(template), **headers)
        assert answer_of(app.claim_route, "POST", claim_url(template), **headers) == whole
    assert b'"sold_out"' in whole[2]

    _, headers, _ = served(app.claim_route, "POST", claim_url(second), **asked[1][1])
    assert ("X-Request-ID", "f" * 32) in headers


def test_an_error_answered_500_is_never_kept_and_logged_each_time(app, monkeypatch, caplog):
    """A domain error whose code has no status (a bug no claim raises today) answers 500:
    each one goes through the handler and is logged as Django logs a 5xx, none is copied."""

    def unmapped(**kwargs):
        error = DomainError()  # no subclass: the error-code table's test reads every one
        error.code = "a_code_no_table_maps"
        raise error

    monkeypatch.setattr("coupons.api.claim_route.issuing.coupon_claim", unmapped)
    user = UserFactory()
    with caplog.at_level(logging.ERROR, logger="django.request"):
        answers = [answer_of(app.claim_route, "POST", "/api/coupons/1/claim", **bearer(user))]
        answers.append(answer_of(app.claim_route, "POST", "/api/coupons/1/claim", **bearer(user)))

    assert [answer[0][:3] for answer in answers] == ["500", "500"]
    logged = [record for record in caplog.records if record.name == "django.request"]
    assert [record.levelname for record in logged] == ["ERROR", "ERROR"]


def test_a_kept_refusal_is_counted_and_ends_its_request(lean_only, settings):
    """The second sold-out answer is the kept one: counted for /metrics as the first, and
    Django's request_finished sent once for each request."""
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    user = UserFactory()
    route = "api/coupons/<id:template_id>/claim"
    key = ("coupons_http_requests_total", (("method", "POST"), ("route", route), ("status", "409")))
    finished = []

    def count_finished(sender, **kwargs):
        finished.append(sender)

    before = scrape(settings)
    request_finished.connect(count_finished)
    try:
        answers = [answer_of(lean_only, "POST", claim_url(sold_out), **bearer(user)) for _ in "ab"]
    finally:
        request_finished.disconnect(count_finished)
    after = scrape(settings)

    assert answers[0] == answers[1] and answers[0][0] == "409 Conflict"
    assert len(finished) == 2
    assert after[key] - before.get(key, 0) == 2
