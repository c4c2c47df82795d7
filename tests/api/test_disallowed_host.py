"""A Host the site does not serve (not in ALLOWED_HOSTS) is 400 everywhere, the admin's pages
included, through the project's real WSGI application (handlers, middleware, error views) as
a server calls it: no test client re-raising or patching anything on the way."""

import io
import json
import logging
import wsgiref.util

import pytest

from config.wsgi import application

pytestmark = pytest.mark.django_db


def wsgi_get(path: str, *, host: str, language: str = "en") -> tuple[str, dict[str, str], str]:
    """Call the WSGI application as a WSGI server does; (status line, headers, body)."""
    environ: dict = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "HTTP_HOST": host,
        "HTTP_ACCEPT_LANGUAGE": language,
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": io.StringIO(),
    }
    wsgiref.util.setup_testing_defaults(environ)
    started: dict = {}

    def start_response(status, headers, exc_info=None):
        started["status"], started["headers"] = status, dict(headers)

    body = b"".join(application(environ, start_response)).decode()
    return started["status"], started["headers"], body


@pytest.mark.parametrize(
    "path", ["/admin/", "/admin/login/", "/admin/coupons/coupontemplate/", "/admin/nowhere/"]
)
def test_an_admin_page_for_a_host_we_do_not_serve_is_the_admin_400_page(path, caplog):
    with caplog.at_level(logging.ERROR, logger="api.exceptions"):
        status, headers, body = wsgi_get(path, host="attacker.example")

    assert status == "400 Bad Request"
    assert headers["Content-Type"].startswith("text/html")
    # The admin's own error page (not the plain-words fallback of a page that failed)
    assert "<title>Bad request | Coupons admin</title>" in body
    assert 'data-status="400"' in body
    assert "could not render the admin error page" not in caplog.text


def test_the_admin_400_page_for_an_unserved_host_speaks_the_operators_language():
    status, _, body = wsgi_get("/admin/", host="attacker.example", language="zh-hans")

    assert status == "400 Bad Request"
    assert '<html lang="zh-hans"' in body


def test_the_api_for_a_host_we_do_not_serve_is_400_in_the_envelope():
    status, headers, body = wsgi_get("/api/coupons", host="attacker.example")

    assert status == "400 Bad Request"
    assert headers["Content-Type"] == "application/json"
    assert body == '{"code": "invalid", "detail": "Bad request."}'


def test_a_served_host_still_reaches_the_admin():
    status, headers, _ = wsgi_get("/admin/", host="localhost")

    assert status == "302 Found"
    assert headers["Location"] == "/admin/login/?next=/admin/"


@pytest.mark.parametrize("host", ["10.0.0.5:8000", "10.0.0.5", "[fd00::5]:8000", "192.0.2.1:80"])
def test_healthz_answers_a_load_balancer_probing_by_address(host):
    """A load balancer probes each instance by its IP; ALLOWED_HOSTS does not list it (before:
    400 `invalid`)."""
    status, headers, body = wsgi_get("/healthz", host=host)

    assert status == "200 OK"
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"status": "ok"}


@pytest.mark.parametrize(
    ("path", "host"),
    [
        ("/api/coupons", "10.0.0.5:8000"),  # only /healthz is answered by address
        ("/admin/login/", "10.0.0.5"),
        ("/healthz", "attacker.example"),  # a name is a host the site serves or not
        ("/healthz", "10.0.0.5.attacker.example"),
    ],
)
def test_other_paths_and_host_names_still_meet_allowed_hosts(path, host):
    status, _, _ = wsgi_get(path, host=host)

    assert status == "400 Bad Request"
