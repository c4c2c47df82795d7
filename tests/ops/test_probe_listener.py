"""The probes on a listener of their own in every server process (ops/probe_listener.py,
decision 1032): answered as on the app's port, nothing else served there, a silent client
holds no thread, the port shared by the processes. The shipped server's probes through a
frozen database: tests/ops/test_shipped_server.py."""

import http.client
import json
import socket
import time

import pytest
from django.test import Client

from config.wsgi import application
from localservers.ports import free_port
from ops.health import monitor
from ops.probe_listener import ProbeListener


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
