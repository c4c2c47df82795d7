"""HTTP health of each Galera node for HAProxy's checks (`option httpchk`), as Percona's
clustercheck does: one long-lived process answers GET on a port per node, 200 when the node is
Synced in the primary component and ready, 503 otherwise. It asks its node on a connection
it keeps open, so a check costs one query: HAProxy's external check forked a shell and a
mariadb client per check, and on a loaded machine such checks timed out on healthy nodes
and moved the writer with no fault (docs/decisions/0800-galera-single-writer-behind-haproxy.md).

    python scripts/galera_health.py --node 13310:13317 --node 13320:13327 ...

(`--node SQL_PORT:CHECK_PORT`, both on 127.0.0.1). A node that does not answer within a
second, such as a frozen one, is down."""

import argparse
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import MySQLdb

STATUS_SQL = (
    "SHOW GLOBAL STATUS WHERE Variable_name IN"
    " ('wsrep_local_state', 'wsrep_cluster_status', 'wsrep_ready')"
)
HEALTHY = {"wsrep_local_state": "4", "wsrep_cluster_status": "Primary", "wsrep_ready": "ON"}
ANSWER_SECONDS = 1  # connect and read timeouts: a node slower than this is down


class NodeHealth:
    """One node's state, asked on one kept connection (one question at a time)."""

    def __init__(self, sql_port: int) -> None:
        self.sql_port = sql_port
        self.lock = threading.Lock()
        self.connection: MySQLdb.Connection | None = None

    def healthy(self) -> bool:
        with self.lock:
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
                return False
        return all(status.get(name) == value for name, value in HEALTHY.items())

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except MySQLdb.Error:
                pass
            self.connection = None


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
    servers = []
    for pair in args.node:
        sql_port, check_port = (int(part) for part in pair.split(":"))
        server = ThreadingHTTPServer(("127.0.0.1", check_port), handler_for(NodeHealth(sql_port)))
        server.daemon_threads = True
        servers.append(server)
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
