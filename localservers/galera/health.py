"""HTTP health of each Galera node for HAProxy's checks (`option httpchk`), as Percona's
clustercheck does: one long-lived process answers GET on a port per node, 200 when the node is
in the primary component and ready, and Synced or serving a state transfer to a rejoining
node (Donor/Desynced, then Joined for a moment before Synced again: its own data is current;
clustercheck's AVAILABLE_WHEN_DONOR; taking a donor out moved the writer at every rejoin),
503 otherwise. It asks its node on a connection it keeps open: HAProxy's external check forked
a shell and a mariadb client per check, and on a loaded machine such checks timed out on
healthy nodes and moved the writer with no fault (docs/decisions/1001-*.md).

    python -m localservers.galera.health --node 13310:13317 --node 13320:13327 ...

(`--node SQL_PORT:CHECK_PORT`, both on 127.0.0.1). A thread per node asks its node every
POLL_INTERVAL; a check is answered from the last answer at once, and a node whose last
healthy answer is older than FRESH_FOR (a frozen one: its query hangs) is down. Answering
from the poll, not from a query per check, keeps a frozen node from holding HAProxy's check
for the client library's read timeout (which it retries: three times the setting)."""

import argparse
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import MySQLdb

STATUS_SQL = (
    "SHOW GLOBAL STATUS WHERE Variable_name IN"
    " ('wsrep_local_state', 'wsrep_cluster_status', 'wsrep_ready')"
)
READY = {"wsrep_cluster_status": "Primary", "wsrep_ready": "ON"}
SYNCED, DONOR, JOINED = "4", "2", "3"  # wsrep_local_state
ANSWER_SECONDS = 1  # the poll's connect and read timeouts
POLL_INTERVAL = 0.2  # seconds between two questions to a node
# A healthy answer older than this no longer counts: a frozen node is down this long after its
# last answer. Above a starved machine's pauses of the poll thread (a false down moves the
# writer), well under the 5 s within which claims must come back.
FRESH_FOR = 1.5


class NodeHealth:
    """One node's state, asked by its own thread on one kept connection."""

    def __init__(self, sql_port: int) -> None:
        self.sql_port = sql_port
        self.connection: MySQLdb.Connection | None = None
        self.healthy_at: float | None = None  # time.monotonic() of the last healthy answer

    def healthy(self) -> bool:
        at = self.healthy_at
        return at is not None and time.monotonic() - at <= FRESH_FOR

    def poll_forever(self) -> None:
        while True:
            started = time.monotonic()
            state = self.ask()
            if state is None and time.monotonic() - started >= ANSWER_SECONDS * 0.9:
                # No answer in time: slow or frozen, not known unhealthy. The last healthy
                # answer stands until it is FRESH_FOR old (a loaded node is not taken out).
                # A refusal or a lost connection comes back at once and counts below.
                continue
            # Joined counts only straight after a healthy answer: a donor passing through it
            # on its way back to Synced, not a joiner that is still catching up.
            healthy = state in (SYNCED, DONOR) or (state == JOINED and self.healthy())
            self.healthy_at = started if healthy else None
            time.sleep(max(0.0, POLL_INTERVAL - (time.monotonic() - started)))

    def ask(self) -> str | None:
        """The node's wsrep_local_state when it is in the primary component and ready."""
        try:
            if self.connection is None:
                self.connection = MySQLdb.connect(
                    host="127.0.0.1",
                    port=self.sql_port,
                    user="root",
                    connect_timeout=ANSWER_SECONDS,
                    read_timeout=ANSWER_SECONDS,
                    write_timeout=ANSWER_SECONDS,
                )
            cursor = self.connection.cursor()
            cursor.execute(STATUS_SQL)
            status = {str(name): str(value) for name, value in cursor.fetchall()}
        except MySQLdb.Error:
            self.close()
            return None
        if any(status.get(name) != value for name, value in READY.items()):
            return None
        return status.get("wsrep_local_state")

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except MySQLdb.Error:
                pass
            self.connection = None


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # HAProxy closes a check's connection once it has the status line: not an error


def handler_for(node: NodeHealth) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            healthy = node.healthy()
            body = b"synced\n" if healthy else b"not synced\n"
            self.send_response(200 if healthy else 503)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # a line per second per node says nothing

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", action="append", required=True, help="SQL_PORT:CHECK_PORT")
    args = parser.parse_args(argv)
    threads = []
    for pair in args.node:
        sql_port, check_port = (int(part) for part in pair.split(":"))
        node = NodeHealth(sql_port)
        server = QuietServer(("127.0.0.1", check_port), handler_for(node))
        threads.append(threading.Thread(target=node.poll_forever, daemon=True))
        threads.append(threading.Thread(target=server.serve_forever, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
