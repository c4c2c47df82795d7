"""gunicorn's gthread worker with threads of its own for /healthz (config/gunicorn_conf.py).

A claim storm during a database freeze holds every request thread for up to the read timeout
(8 s, retried once), and gthread queues each new connection behind them: /healthz, quick by
itself (ops/health.py), waited for a free thread (15 of 64 probes over 1 s, worst 16.5 s).
This worker peeks at the request line of each connection it is about to hand to a thread
(MSG_PEEK: the bytes stay for gunicorn's parser) and gives `GET|HEAD /healthz` to a small
pool of its own; every other request goes to the normal pool, queued as before, so nothing
new is refused. Decision 0644."""

import selectors
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from types import FrameType

from gunicorn.workers.gthread import DEFAULT_WORKER_DATA_TIMEOUT, TConn, ThreadWorker

# Threads per worker kept for /healthz: a check waits at most HEALTH_TIMEOUT (0.5 s), so a
# second thread answers from the cache meanwhile.
HEALTH_THREADS = 2
# The longest request line read here: a method, the path and the space or `?` after it.
PEEK_BYTES = 32
HEALTH_LINES = tuple(
    f"{method} /{probe}{end}".encode()
    for method in ("GET", "HEAD")
    for probe in ("healthz", "readyz", "livez")
    for end in (" ", "?")
)


def is_health_request(head: bytes) -> bool:
    """Whether the first bytes of a request are a probe's request line (/healthz, /readyz,
    /livez)."""
    return head.startswith(HEALTH_LINES)


class HealthReservedWorker(ThreadWorker):
    def init_process(self) -> None:
        self.health_pool = ThreadPoolExecutor(
            max_workers=HEALTH_THREADS, thread_name_prefix="healthz-request"
        )
        super().init_process()

    def enqueue_req(self, conn: TConn) -> None:
        head = self._first_bytes(conn)
        if head is None:
            # A new connection whose request has not arrived: the poller hands it back
            # (on_pending_socket_readable) once it is readable, then it is sorted.
            self._wait_for_request(conn)
            return
        if is_health_request(head):
            conn.data_ready = True  # seen readable: the thread need not wait for data
            future = self.health_pool.submit(self.handle, conn)
            future.add_done_callback(
                lambda done: self.method_queue.defer(self.finish_request, conn, done)
            )
            return
        super().enqueue_req(conn)

    def _first_bytes(self, conn: TConn) -> bytes | None:
        """The start of the connection's next request without consuming it; b"" when it
        cannot be read here (TLS, closed, an error: the normal pool deals with it), None
        when nothing has arrived on a new connection yet."""
        if self.cfg.is_ssl:
            return b""
        if conn.parser is not None:
            buffered = conn.parser.unreader.buf.getvalue()
            if buffered:  # read ahead with the previous request's body
                return buffered[:PEEK_BYTES]
        try:
            # MSG_DONTWAIT: the main loop never blocks here, whatever the socket's mode.
            return conn.sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None if not conn.initialized and not conn.data_ready else b""
        except OSError:
            return b""

    def _wait_for_request(self, conn: TConn) -> None:
        """gthread's own path for a connection that sent nothing yet (finish_request's
        deferral): on the poller, closed if it stays silent as long as gthread would wait
        (its thread's wait for data, then the keep-alive timeout). murder_pending stops at the
        first live entry, so a silent connection behind one of these may close up to 5 s late."""
        conn.sock.setblocking(False)
        conn.timeout = time.monotonic() + DEFAULT_WORKER_DATA_TIMEOUT + self.cfg.keepalive
        self.pending_conns.append(conn)
        self.poller.register(
            conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.health_pool.shutdown(wait=False)

    def handle_quit(self, sig: int, frame: FrameType | None) -> None:
        self.health_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)
