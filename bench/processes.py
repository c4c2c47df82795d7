"""The benchmark's app server (gunicorn with a worker class, or granian's WSGI), in its own
process group so that stopping it stops every worker, stopped at exit whatever happens. Its
mariadbd and redis-server are localservers': the bench's alone, so that their counters
(statements, commands) count this run's requests and nothing else."""

import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.progress import log
from localservers.processes import ManagedProcess

# What `--server` may name: gunicorn's two worker classes, or granian (WSGI).
SERVERS = ("gthread", "sync", "granian")
# A gthread worker's connections: wrk's 64 spread over 2 workers, and some to spare.
GTHREAD_CONNECTIONS = 40


def server_command(server: str, *, port: int, workers: int, threads: int) -> list[str]:
    """The command line of `server` serving config.wsgi on 127.0.0.1:`port`, `threads`
    request threads per worker (gthread and granian; a sync worker has one)."""
    if server == "granian":
        return [
            *(sys.executable, "-m", "granian", "--interface", "wsgi", "config.wsgi:application"),
            *("--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)),
            *("--blocking-threads", str(threads), "--backlog", "2048", "--no-ws"),
        ]
    command = [
        *(sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}"),
        *("--workers", str(workers), "--worker-class", server, "--timeout", "60"),
        *("--backlog", "2048"),
    ]
    if server != "gthread":
        return command
    # At most this many connections per worker, so that a burst of new connections (wrk opens
    # its 64 at once) spreads over the workers: without it one worker could take nearly all
    # of them and a row ran on one core (1.0 app cores instead of 1.6-1.7, from run to run).
    return [*command, "--threads", str(threads), "--worker-connections", str(GTHREAD_CONNECTIONS)]


def server_description(server: str, *, workers: int, threads: int) -> str:
    if server == "granian":
        return f"granian WSGI, {workers} workers x {threads} blocking threads"
    if server == "gthread":
        return f"gunicorn, {workers} gthread workers x {threads} threads"
    return f"gunicorn, {workers} {server} workers"


class AppServer(ManagedProcess):
    def __init__(
        self,
        *,
        port: int,
        workers: int,
        server: str,
        threads: int,
        env: dict[str, str],
        log_dir: Path,
        cwd: Path,
    ):
        command = server_command(server, port=port, workers=workers, threads=threads)
        super().__init__(server, command, env=env, log_path=log_dir / f"{server}.log", cwd=cwd)
        self.server = server
        self.base_url = f"http://127.0.0.1:{port}"
        self.description = server_description(server, workers=workers, threads=threads)

    def start(self) -> None:
        super().start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.running:
                raise self.fail("exited at start")
            try:
                with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        log(f"app server up at {self.base_url} ({self.description})")
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise self.fail("did not answer /healthz within 30 s")
