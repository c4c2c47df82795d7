"""The probes (/healthz, /readyz, /livez) on a listener of their own in every server process
(decision 1032), so that no server's request threads stand between a load balancer and its
answer: while a frozen database holds every request thread with a claim, the probes are
still answered, within a second, by the process that would serve the traffic.

Each process binds PROBE_BIND with SO_REUSEPORT (the kernel spreads the connections over the
processes that listen; a process that dies stops being asked) and answers on PROBE_THREADS
threads of its own. A probe goes through the same WSGI application as on the app's port,
the whole middleware chain and ops.health's view, so it is answered byte for byte as
there; any other path is 404 here, so the port is no way around a proxy in front of the app."""

import json
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

logger = logging.getLogger(__name__)

PROBE_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
# A check may wait HEALTH_TIMEOUT (0.5 s) while the other thread answers from the cache.
PROBE_THREADS = 2
NOT_FOUND = json.dumps({"code": "not_found", "detail": "Not found."}).encode()

WSGIApplication = Callable[[dict, Callable], Iterable[bytes]]


def probes_only(application: WSGIApplication) -> WSGIApplication:
    """`application` for the probe paths, 404 in the API's envelope for every other path."""

    def serve(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") in PROBE_PATHS:
            return application(environ, start_response)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(NOT_FOUND)))]
        start_response("404 Not Found", headers)
        return [NOT_FOUND]

    return serve


class ProbeRequestHandler(WSGIRequestHandler):
    # A client whose request has not arrived (or not whole) after this long is dropped.
    timeout = 1

    def log_message(self, format: str, *args) -> None:
        """A load balancer polls every few seconds: not logged line by line (/metrics counts
        the probes, and a failing one is logged where its cause is met)."""


class ProbeServer(WSGIServer):
    """wsgiref's server, bound without a name lookup (HTTPServer asks the resolver for the
    host's name at bind, which may hang where DNS is away) and shareable between processes."""

    request_queue_size = 128  # connections the kernel holds until accepted (wsgiref's: 5)

    def __init__(self, host: str, port: int) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), ProbeRequestHandler, bind_and_activate=False)

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.socket.bind(self.server_address)
        self.server_address = self.socket.getsockname()
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]
        self.setup_environ()


class ProbeListener:
    """Listens on `bind` (`host:port`, `[::]:port`) until close(); the process's exit ends it.
    One thread accepts and waits for each connection's request to arrive (at most TIMEOUT),
    PROBE_THREADS answer the ones that have: a client that connects and says nothing never
    holds a thread that answers."""

    def __init__(self, application: WSGIApplication, bind: str) -> None:
        host, _, port = bind.rpartition(":")
        self.server = ProbeServer(host.strip("[]") or "0.0.0.0", int(port))
        self.server.server_bind()
        self.server.server_activate()
        self.server.set_app(probes_only(application))
        self.server.socket.setblocking(False)
        self.port = self.server.server_port
        self.closed = threading.Event()
        self.answering = ThreadPoolExecutor(PROBE_THREADS, thread_name_prefix="probes")
        self.accepting = threading.Thread(target=self.accept_forever, name="probes", daemon=True)
        self.accepting.start()

    def accept_forever(self) -> None:
        listening = self.server.socket
        selector = selectors.DefaultSelector()
        selector.register(listening, selectors.EVENT_READ)
        deadlines: dict[socket.socket, float] = {}  # accepted, request not arrived yet
        while not self.closed.is_set():
            for key, _ in selector.select(timeout=0.25):
                if key.fileobj is listening:
                    try:
                        connection, address = listening.accept()
                    except OSError:  # taken by another process, reset, or out of descriptors
                        self.closed.wait(0.01)
                        continue
                    selector.register(connection, selectors.EVENT_READ, address)
                    deadlines[connection] = time.monotonic() + ProbeRequestHandler.timeout
                else:
                    connection = key.fileobj  # type: ignore[assignment]
                    selector.unregister(connection)
                    del deadlines[connection]
                    self.answering.submit(self.answer, connection, key.data)
            now = time.monotonic()
            for connection in [c for c, deadline in deadlines.items() if deadline < now]:
                selector.unregister(connection)
                del deadlines[connection]
                connection.close()
        for connection in deadlines:
            connection.close()
        selector.close()

    def answer(self, connection: socket.socket, address: tuple) -> None:
        connection.setblocking(True)
        try:
            self.server.finish_request(connection, address)
        except Exception:
            logger.exception("a probe failed")
        finally:
            self.server.shutdown_request(connection)

    def close(self) -> None:
        self.closed.set()
        self.accepting.join(timeout=5)
        self.server.server_close()
        self.answering.shutdown(wait=True)
