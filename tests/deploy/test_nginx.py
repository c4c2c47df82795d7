"""The shipped nginx config (deploy/nginx/coupons.conf.template), run by Debian's nginx in front
of the shipped server with 2 workers: half-sent requests do not stall other clients, behind
nginx or not."""

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from localservers.ports import free_port
from tests.support.live_server import app_serving
from tests.support.nginx_server import nginx_serving

# The servers read the test database, which pytest-django creates only for marked tests.
pytestmark = [pytest.mark.django_db, pytest.mark.servers]

SLOW_CLIENTS = 50


@dataclass
class Stack:
    app: str
    nginx: str


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Stack]:
    """One shipped server (2 workers) and one nginx in front of it, for the whole module."""
    log = tmp_path_factory.mktemp("app") / "app.log"
    with django_db_blocker.unblock(), app_serving(log, workers=2) as app:
        with nginx_serving(app.removeprefix("http://")) as nginx:
            yield Stack(app=app, nginx=nginx)


@contextmanager
def half_sent_requests(base_url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that each send part of a request and then go quiet: half of them
    stop inside the headers, half inside a declared 1,000-byte body."""
    host, port = base_url.removeprefix("http://").split(":")
    sockets = []
    try:
        for index in range(count):
            sock = socket.create_connection((host, int(port)), timeout=5)
            if index % 2:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            else:
                sock.sendall(
                    b"POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                    b'{"items": ['
                )
            sockets.append(sock)
        time.sleep(0.5)  # let the server accept them and start waiting for the rest
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def timed_get(url: str, timeout: float) -> tuple[int, float]:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        response.read()
        return response.status, time.monotonic() - started


@pytest.mark.parametrize("through", ["nginx", "app"])
def test_half_sent_requests_delay_no_one_behind_nginx_or_straight_to_the_app(stack, through):
    """Behind nginx, which reads every request first. Straight to the app too: gunicorn's
    sync workers were each stuck reading one slow client, so nobody else was served (nginx in
    front was the cure, SPEC section 12); granian reads a request before a thread takes it, so
    more half-sent requests than the server has threads delay no one."""
    base = getattr(stack, through)
    for _ in range(4):  # warm both workers (first-request imports, connections)
        timed_get(base + "/healthz", timeout=10)

    with half_sent_requests(base, SLOW_CLIENTS):
        answers = [timed_get(base + "/healthz", timeout=5) for _ in range(10)]

    assert [status for status, _ in answers] == [200] * 10
    slowest = max(seconds for _, seconds in answers)
    assert slowest < 1.0, f"slowest answer took {slowest:.2f} s"


def test_nginx_refuses_a_body_over_1_mib_in_the_error_envelope(stack):
    request = urllib.request.Request(
        stack.nginx + "/api/orders",
        data=b"x" * (1024 * 1024 + 1),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)

    assert refused.value.code == 413
    assert refused.value.headers["Content-Type"] == "application/json"
    assert json.loads(refused.value.read())["code"] == "too_large"


def test_nginx_passes_a_staff_file_of_up_to_8_mib_to_its_upload_page_only(stack):
    """The import and grant-from-file pages take files up to 8 MiB (SPEC section 34); the app
    answers them (here: 403, the form's CSRF token missing), every other path 413."""

    answers: list[str] = []  # each answer's status, server and body: the failure shows who said it

    def status(path: str, size: int) -> int:
        """POST a file of `size` bytes as a form sends it, with a CSRF cookie: the app's CSRF
        check then parses the whole form for its token before it refuses, so the app never
        answers (and closes the connection) while nginx is still sending the body. Without
        the cookie Django refuses unread: the race the first runs of this test lost under
        load with gunicorn (nginx's 502, then its 413 in the error page)."""
        head = b'--F\r\nContent-Disposition: form-data; name="file"; filename="f.csv"\r\n\r\n'
        body = head + b"x" * (size - len(head) - 8) + b"\r\n--F--\r\n"
        request = urllib.request.Request(
            stack.nginx + path,
            data=body,
            headers={
                "Content-Type": "multipart/form-data; boundary=F",
                "Cookie": "csrftoken=" + "a" * 32,
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                code, headers, text = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as refused:
            code, headers, text = refused.code, refused.headers, refused.read()
        answers.append(f"{path} {size}: {code} {dict(headers)} {text[:200]!r}")
        return code

    two_mib = 2 * 1024 * 1024
    expected = [
        ("/admin/coupons/coupontemplate/7/codes/import/", two_mib, 403),  # the app's
        ("/admin/coupons/coupontemplate/7/grant/file/", two_mib, 403),
        ("/admin/coupons/coupontemplate/7/codes/import/", 8 * 1024 * 1024 + 1, 413),
        ("/admin/coupons/coupontemplate/7/change/", two_mib, 413),
        ("/api/admin/coupons/7/codes/import", two_mib, 413),
    ]
    got = [(path, size, status(path, size)) for path, size, _ in expected]
    assert got == expected, "\n".join(answers)


def test_nginx_answers_503_unavailable_when_the_app_is_down():
    with nginx_serving(f"127.0.0.1:{free_port()}") as nginx:  # nothing listens there
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(nginx + "/healthz", timeout=10)

    assert refused.value.code == 503
    assert refused.value.headers["Retry-After"] == "5"
    assert json.loads(refused.value.read()) == {
        "code": "unavailable",
        "detail": "Service temporarily unavailable.",
    }


def test_a_staff_file_nginx_cannot_pass_on_is_answered_503_not_413():
    """A 2 MiB file for its upload page with the app away: nginx's 502 becomes the envelope's
    503, not an HTML 413 of the error page's own body limit."""
    with nginx_serving(f"127.0.0.1:{free_port()}") as nginx:  # nothing listens there
        request = urllib.request.Request(
            nginx + "/admin/coupons/coupontemplate/7/grant/file/",
            data=b"x" * (2 * 1024 * 1024),
            headers={"Content-Type": "application/octet-stream"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)

    assert refused.value.code == 503
    assert json.loads(refused.value.read())["code"] == "unavailable"


def raw_request(base_url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (methods and URIs urllib would refuse); (status, headers, body)."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        # nginx refuses TRACE itself (405) and a request line longer than its header buffers
        # (414); neither reaches the app.
        (b"TRACE /api/coupons HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
         405, "method_not_allowed"),
        (b"GET /api/coupons?q=" + b"a" * 20_000
         + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
         414, "uri_too_long"),
        (b"GET /api/coupons HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 20_000
         + b"\r\nConnection: close\r\n\r\n",
         400, "invalid"),
        (b"GARBAGE\r\n\r\n", 400, "invalid"),
    ],
)  # fmt: skip
def test_nginx_answers_its_own_refusals_in_the_error_envelope(stack, request_bytes, status, code):
    answered, headers, body = raw_request(stack.nginx, request_bytes)

    assert answered == status
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == code


def test_nginxs_own_405_says_which_methods_are_allowed(stack):
    answered, headers, _ = raw_request(
        stack.nginx, b"TRACE /api/coupons HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )

    assert answered == 405
    assert headers["allow"] == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"  # before: none


@pytest.mark.parametrize(
    "request_bytes",
    [
        # Each passed nginx's old 16 KiB buffers and met gunicorn's limits: its HTML 414/431.
        # The last is over granian's 100 header lines: its bodiless 431, which nginx answers.
        b"GET /api/coupons?q=" + b"a" * 5_000
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        b"GET /api/coupons HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 9_000
        + b"\r\nConnection: close\r\n\r\n",
        b"GET /api/coupons HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + b"".join(b"X-H%d: v\r\n" % n for n in range(150))
        + b"Connection: close\r\n\r\n",
    ],
    ids=["request-line-5k", "header-9k", "150-headers"],
)  # fmt: skip
def test_requests_over_the_app_servers_limits_are_answered_in_the_envelope(stack, request_bytes):
    answered, headers, body = raw_request(stack.nginx, request_bytes)

    assert headers["content-type"] == "application/json", (answered, body[:200])
    assert "code" in json.loads(body)
