"""Behind the shipped nginx (deploy/nginx/coupons.conf.template, run by Debian's nginx in front
of the shipped server), the app's absolute links keep the scheme, host and port the client used
(SPEC section 17, "Errors and proxies"), and forwarded headers count only from the proxy."""

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from rest_framework_simplejwt.tokens import AccessToken

from tests.support.factories import ProductFactory, UserFactory
from tests.support.live_server import app_serving
from tests.support.nginx_server import nginx_serving

pytestmark = pytest.mark.servers

# nginx and the test reach the app from 127.0.0.1; a client "from elsewhere" connects from
# another loopback address, which the app does not trust.
PROXY_ADDRESS = "127.0.0.1"
STRANGER_ADDRESS = "127.0.0.3"


@dataclass
class Stack:
    app: str
    edge_nginx: str  # nginx is the edge: nobody in front of it is trusted
    fronted_nginx: str  # a TLS load balancer at 127.0.0.1 in front of nginx is trusted


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Stack]:
    log = tmp_path_factory.mktemp("app") / "app.log"
    trusting_nginx = {"TRUSTED_PROXIES": f"{PROXY_ADDRESS}/32"}
    with (
        django_db_blocker.unblock(),
        app_serving(log, workers=1, environment=trusting_nginx) as app,
        nginx_serving(app.removeprefix("http://")) as edge,
        nginx_serving(app.removeprefix("http://"), trusted_front=f"{PROXY_ADDRESS}/32") as fronted,
    ):
        yield Stack(app=app, edge_nginx=edge, fronted_nginx=fronted)


@pytest.fixture
def token(transactional_db) -> str:
    """A shopper's token and three committed products, two pages of two."""
    for _ in range(3):
        ProductFactory()
    return str(AccessToken.for_user(UserFactory()))


def next_link(
    base_url: str, token: str, *, headers: dict[str, str] | None = None, source: str = PROXY_ADDRESS
) -> str:
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10, source_address=(source, 0))
    try:
        connection.request(
            "GET",
            "/api/products?page_size=2",
            headers={"Authorization": f"Bearer {token}", **(headers or {})},
        )
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    assert answer.status == 200, body
    return json.loads(body)["next"]


def test_pagination_links_keep_the_clients_host_and_port_behind_nginx(stack, token):
    # nginx listens on a port of its own; the link must name it, not the app's nor none.
    assert (
        next_link(stack.edge_nginx, token) == f"{stack.edge_nginx}/api/products?page=2&page_size=2"
    )


def test_a_client_cannot_make_the_edge_nginx_claim_https(stack, token):
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "attacker.example"}

    link = next_link(stack.edge_nginx, token, headers=forged)

    assert link == f"{stack.edge_nginx}/api/products?page=2&page_size=2"


def test_behind_a_trusted_tls_front_links_say_https(stack, token):
    # The front terminated TLS and says so; nginx passes it on, the app believes nginx.
    link = next_link(stack.fronted_nginx, token, headers={"X-Forwarded-Proto": "https"})

    assert link == stack.fronted_nginx.replace("http://", "https://") + (
        "/api/products?page=2&page_size=2"
    )


def test_the_trusted_front_without_tls_keeps_http(stack, token):
    link = next_link(stack.fronted_nginx, token, headers={"X-Forwarded-Proto": "http"})

    assert link.startswith(stack.fronted_nginx + "/")


def test_forwarded_headers_count_only_from_the_proxy(stack, token):
    forged = {"X-Forwarded-Proto": "https"}

    from_the_proxy = next_link(stack.app, token, headers=forged, source=PROXY_ADDRESS)
    from_a_stranger = next_link(stack.app, token, headers=forged, source=STRANGER_ADDRESS)

    assert from_the_proxy.startswith("https://")
    assert from_a_stranger == f"{stack.app}/api/products?page=2&page_size=2"


def test_the_admin_answers_400_for_an_unserved_host_through_nginx(stack):
    request = urllib.request.Request(
        stack.edge_nginx + "/admin/", headers={"Host": "attacker.example"}
    )

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)

    assert refused.value.code == 400
    assert "<title>Bad request | Coupons admin</title>" in refused.value.read().decode()


def admin_login(base_url: str, *, origin: str, username: str) -> http.client.HTTPResponse:
    """The admin's login form as a browser posts it: the CSRF cookie and token from the form
    page, and the page's own origin (scheme, host and port) in Origin."""
    host, port = base_url.removeprefix("http://").split(":")
    headers = {"X-Forwarded-Proto": origin.split("://")[0]}
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", "/admin/login/", headers=headers)
        page = connection.getresponse()
        html = page.read().decode()
        cookie = page.getheader("Set-Cookie").split(";")[0]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        form = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": "pass-word-123",
                "next": "/admin/",
            }
        )
        connection.request(
            "POST",
            "/admin/login/",
            body=form,
            headers={
                **headers,
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": cookie,
                "Origin": origin,
            },
        )
        answer = connection.getresponse()
        answer.read()
        return answer
    finally:
        connection.close()


@pytest.fixture
def staff_username(transactional_db) -> str:
    return UserFactory(is_staff=True).username


def test_the_admin_login_posts_on_whatever_port_nginx_listens_without_trusted_origins(
    stack, staff_username
):
    # No CSRF_TRUSTED_ORIGINS: the page's origin is the Host nginx passes on, port included.
    answer = admin_login(stack.edge_nginx, origin=stack.edge_nginx, username=staff_username)

    assert answer.status == 302, answer.status
    assert answer.getheader("Location") == "/admin/"


def test_the_admin_login_posts_from_https_behind_a_trusted_tls_front(stack, staff_username):
    https_origin = stack.fronted_nginx.replace("http://", "https://")

    answer = admin_login(stack.fronted_nginx, origin=https_origin, username=staff_username)

    assert answer.status == 302, answer.status
    assert answer.getheader("Location") == "/admin/"


def test_a_post_from_another_origin_is_still_refused(stack, staff_username):
    answer = admin_login(
        stack.edge_nginx, origin="http://attacker.example:8080", username=staff_username
    )

    assert answer.status == 403
