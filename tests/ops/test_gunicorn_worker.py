"""config/gunicorn_worker.py under real gunicorn: /healthz is served while every request
thread is held (decision 0644), and everything else still queues for the normal threads.

The app is a few lines of WSGI: any path but /healthz blocks until the test releases it, so
"every thread is busy" is a fact the test controls, not a race with a database."""

import http.client
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.gunicorn_worker import is_health_request
from localservers.ports import free_port
from localservers.waiting import wait_until

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
THREADS = 2
WORKER_CLASS = "config.gunicorn_worker.HealthReservedWorker"  # what config/gunicorn_conf.py names

BLOCKING_APP = """
import time
from pathlib import Path

HERE = Path(__file__).parent


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path != "/healthz":
        (HERE / ("entered" + path.replace("/", "-"))).touch()
        deadline = time.monotonic() + 60
        while not (HERE / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"""


@dataclass
class Server:
    port: int
    folder: Path

    def entered(self) -> int:
        return len(list(self.folder.glob("entered-*")))

    def release(self) -> None:
        (self.folder / "release").touch()


@contextmanager
def worker_server(tmp_path: Path, worker_class: str) -> Iterator[Server]:
    (tmp_path / "blocking_app.py").write_text(BLOCKING_APP)
    port = free_port()
    command = [
        str(BIN / "gunicorn"), "blocking_app:app", "--pythonpath", str(tmp_path),
        "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", str(THREADS),
        "--worker-class", worker_class,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(
            lambda: get(port, "/healthz", timeout=2) == 200,
            timeout=30,
            what="gunicorn to answer",
            ignoring=(OSError,),
        )
        yield Server(port=port, folder=tmp_path)
    finally:
        (tmp_path / "release").touch()
        process.terminate()
        process.wait(timeout=30)


def get(port: int, path: str, *, method: str = "GET", timeout: float = 60) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_only_healthz_request_lines_go_to_the_health_threads():
    assert is_health_request(b"GET /healthz HTTP/1.1\r\nHost: x")
    assert is_health_request(b"HEAD /healthz HTTP/1.1\r\n")
    assert is_health_request(b"GET /healthz?probe=1 HTTP/1.1\r\n")
    assert not is_health_request(b"GET /healthzz HTTP/1.1\r\n")
    assert not is_health_request(b"POST /healthz HTTP/1.1\r\n")
    assert not is_health_request(b"GET /api/healthz HTTP/1.1\r\n")
    assert not is_health_request(b"GET /heal")  # half a request line: the normal threads
    assert not is_health_request(b"")


@pytest.mark.servers
def test_healthz_is_served_while_every_request_thread_is_held(tmp_path):
    with (
        worker_server(tmp_path, WORKER_CLASS) as server,
        ThreadPoolExecutor(max_workers=THREADS + 2) as clients,
    ):
        # Every normal thread held, and one more request queued behind them.
        held = [clients.submit(get, server.port, f"/claim{i}") for i in range(THREADS + 1)]
        wait_until(lambda: server.entered() == THREADS, timeout=30, what="the threads held")

        # gthread's own worker would keep these waiting until the release: the timeout is
        # there so that the failure is an error, not a hang.
        assert get(server.port, "/healthz", timeout=20) == 200
        assert get(server.port, "/healthz", method="HEAD", timeout=20) == 200
        assert keep_alive_health_twice(server.port) == [200, 200]
        assert late_request_line(server.port) == b"HTTP/1.1 200 OK"
        assert server.entered() == THREADS  # nothing else jumped the queue
        assert not any(request.done() for request in held)

        server.release()
        assert [request.result(timeout=30) for request in held] == [200] * (THREADS + 1)


def keep_alive_health_twice(port: int) -> list[int]:
    """Two /healthz on one kept-alive connection: the second comes back through the poller."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    statuses = []
    try:
        for _ in range(2):
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
    finally:
        connection.close()
    return statuses


def late_request_line(port: int) -> bytes:
    """A connection that sends its request only once the worker has accepted it (it waits on
    the poller for the request, then is sorted)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        time.sleep(0.2)  # accepted meanwhile (if not, the request is sorted at once: same answer)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return sock.recv(64).split(b"\r\n")[0]
