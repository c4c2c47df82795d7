"""What each load generator costs in CPU per request, against a trivial local HTTP server (so
the figure is the client's alone): `python -m bench.client_cost [REQUESTS]`.

The throughput rows use wrk because on a 2-core machine every CPU second the client burns is
taken from the server; this is the measurement behind that choice (bench/README.md)."""

import json
import resource
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench import wrk


class Answer201(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer201)
    server.daemon_threads = True
    server.request_queue_size = 256
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    tokens = [f"token-{index}" for index in range(requests)]

    before = children_cpu_seconds()
    with tempfile.TemporaryDirectory() as workdir:
        wrk.run(
            url + "/claim",
            method="POST",
            tokens=tokens,
            requests=requests,
            concurrency=64,
            workdir=Path(workdir),
        )
    wrk_seconds = children_cpu_seconds() - before

    before = children_cpu_seconds()
    plan = {
        "base_url": url,
        "concurrency": 64,
        "requests": [["POST", "/claim", token] for token in tokens],
        "warmup": [],
    }
    subprocess.run(
        [sys.executable, "-m", "bench.load"],
        input=json.dumps(plan),
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    aiohttp_seconds = children_cpu_seconds() - before
    server.shutdown()
    for name, seconds in (("wrk", wrk_seconds), ("aiohttp process", aiohttp_seconds)):
        print(
            f"{name}: {requests} POSTs at 64 connections, {seconds:.2f} CPU s"
            f" ({1000 * seconds / requests:.3f} s per 1,000 requests, start-up included)"
        )


if __name__ == "__main__":
    main()
