"""The probes on a listener of their own in every server process (ops/probe_listener.py,
decision 1032): answered as on the app's port, nothing else served there, a silent client
holds no thread, and under granian, whose request threads a frozen database holds, every probe
within a second."""

import http.client
import json
import socket
import sys
import time

import pytest
from django.test import Client

from config.wsgi import application
from localservers.ports import free_port
from ops.health import monitor
from ops.probe_listener import ProbeListener
from tests.support.shipped_server import (
    PROBERS,
    PROBES_EACH,
    probe_through_a_freeze_under_a_storm,
    shipped_app,
)


@pytest.fixture
def listener():
    monitor.reset()
    probes = ProbeListener(application, "127.0.0.1:0")
    yield probes
    probes.close()
    monitor.reset()


def get(port: int, path: str, method: str = "GET") -> tuple[int, dict, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers={"Host": "127.0.0.1"})
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    return response.status, json.loads(body) if body else {}, time.monotonic() - started


@pytest.mark.django_db
def test_the_probes_are_answered_as_on_the_apps_port(listener):
    client = Client(HTTP_HOST="127.0.0.1", enforce_csrf_checks=True)
    for path in ("/healthz", "/readyz", "/livez"):
        status, body, _ = get(listener.port, path)
        on_the_app = client.get(path)
        assert (status, body) == (on_the_app.status_code, on_the_app.json()), path
        assert status == 200
    status, body, _ = get(listener.port, "/healthz", method="DELETE")
    on_the_app = client.delete("/healthz")
    assert (status, body) == (on_the_app.status_code, on_the_app.json())
    assert status == 403  # CSRF, before the view's 405, as on the app's port


@pytest.mark.django_db
def test_nothing_but_the_probes_is_served_there(listener):
    for path in ("/api/coupons", "/admin/", "/metrics", "/healthz/", "/"):
        status, body, _ = get(listener.port, path)
        assert (status, body) == (404, {"code": "not_found", "detail": "Not found."}), path


@pytest.mark.django_db
def test_clients_that_say_nothing_hold_no_thread_that_answers(listener):
    silent = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(8)]
    half = socket.create_connection(("127.0.0.1", listener.port))
    half.sendall(b"GET /hea")  # half a request line, never finished
    try:
        status, _, seconds = get(listener.port, "/livez")
        assert status == 200
        assert seconds < 0.5
        # Each is dropped once it has said nothing whole for a second.
        for connection in [*silent, half]:
            connection.settimeout(5)
            assert connection.recv(1024) == b""
    finally:
        for connection in [*silent, half]:
            connection.close()


@pytest.mark.django_db
def test_processes_share_the_port_and_a_closed_one_stops_being_asked():
    port = free_port()
    first = ProbeListener(application, f"127.0.0.1:{port}")
    second = ProbeListener(application, f"127.0.0.1:{port}")  # another worker's, by SO_REUSEPORT
    try:
        first.close()
        assert all(get(port, "/livez")[0] == 200 for _ in range(20))
    finally:
        second.close()
    with pytest.raises(ConnectionRefusedError):
        get(port, "/livez")  # nobody listens once the last process has closed


@pytest.mark.servers
@pytest.mark.django_db  # the test database must exist for the fixtures; the app uses its own
def test_under_granian_every_probe_is_answered_within_a_second_of_a_freeze_under_a_storm(
    tmp_path, own_redis
):
    """Decision 1014 found granian's probes waiting for its request threads behind claims stuck
    on a frozen database (16 of 64 over 1 s, worst 18.5 s): on their own port they do not. The
    app's port, probed in the same freeze, shows what they were spared."""
    granian = [
        *(sys.executable, "-m", "granian", "--interface", "wsgi", "config.wsgi:application"),
        *("--workers", "2", "--blocking-threads", "8", "--port", "8000", "--no-access-log"),
    ]
    with shipped_app(tmp_path, own_redis.url, granian) as app:
        run = probe_through_a_freeze_under_a_storm(app, (app.probe_port, app.port))

    print(f"probes' port: {run.said(app.probe_port)}; app's port: {run.said(app.port)}")  # -s
    probes = run.probes[app.probe_port]
    assert run.slow(app.probe_port) == [], run.said(app.probe_port)
    assert len(probes) == PROBERS * PROBES_EACH
    assert {answer.status for answer in probes} <= {200, 503}
    assert run.claims.failures == []
    assert {answer.status for answer in run.claims.answers} <= {201, 503}
