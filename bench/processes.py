"""The benchmark's own servers: a private mariadbd, redis-server and gunicorn, each in its own
process group so that stopping it stops every child, and all stopped at exit whatever happens.
The database and Redis are the bench's alone so that their counters (statements, commands)
count this run's requests and nothing else."""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import MySQLdb
import redis

from bench.progress import log


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ManagedProcess:
    """A child process in a new session (its own process group), stopped at interpreter exit."""

    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        env: dict[str, str],
        log_path: Path,
        cwd: Path | None = None,
    ):
        self.name = name
        self.cwd = cwd
        self.command = command
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        atexit.register(self.stop)

    def start(self) -> None:
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except ProcessLookupError:
            pass

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def fail(self, reason: str) -> RuntimeError:
        return RuntimeError(f"{self.name} {reason}; last log lines:\n{self.log_tail()}")


class RedisServer(ManagedProcess):
    """A throw-away redis-server on its own port: no persistence, never the shared one."""

    def __init__(self, port: int, *, log_dir: Path):
        command = [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        super().__init__(
            "redis-server", command, env=dict(os.environ), log_path=log_dir / "redis.log"
        )
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"

    def start(self) -> None:
        super().start()
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if not self.running:
                raise self.fail("exited at start")
            try:
                if client.ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise self.fail("did not answer PING within 10 s")

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=5)


class MariaDBServer(ManagedProcess):
    """A throw-away mariadbd with its own data directory under `base_dir`, on its own port,
    configured like the shared development server (128 MB buffer pool, a 96 MB redo log,
    O_DIRECT, every commit flushed, no binary log); root connects without a password."""

    def __init__(self, port: int, *, base_dir: Path):
        self.port = port
        self.base_dir = base_dir
        self.datadir = base_dir / "mariadb-data"
        command = [
            shutil.which("mariadbd") or "/usr/sbin/mariadbd", "--no-defaults",
            f"--datadir={self.datadir}", f"--port={port}",
            "--bind-address=127.0.0.1", f"--socket={base_dir / 'mariadbd.sock'}",
            f"--pid-file={base_dir / 'mariadbd.pid'}", "--user=root", "--skip-log-bin",
            "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=96M",
            "--innodb-flush-method=O_DIRECT", "--innodb-flush-log-at-trx-commit=1",
            "--max-connections=200", "--performance-schema=OFF",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
        ]  # fmt: skip
        super().__init__(
            "mariadbd", command, env=dict(os.environ), log_path=base_dir / "mariadbd.log"
        )

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def install(self) -> None:
        """A fresh data directory (mariadb-install-db), once."""
        if self.datadir.exists():
            return
        result = subprocess.run(
            [
                "mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db",
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {result.stderr[-2000:]}")

    def start(self) -> None:
        self.install()
        super().start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not self.running:
                raise self.fail("exited at start")
            try:
                self.connect().close()
                return
            except MySQLdb.OperationalError:
                time.sleep(0.1)
        raise self.fail("did not accept a connection within 60 s")

    def connect(self) -> MySQLdb.Connection:
        return MySQLdb.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=2)


class Gunicorn(ManagedProcess):
    def __init__(
        self,
        *,
        port: int,
        workers: int,
        worker_class: str,
        threads: int,
        env: dict[str, str],
        log_dir: Path,
        cwd: Path,
    ):
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--timeout",
            "60",
            "--backlog",
            "2048",
        ]
        if worker_class == "gthread":
            command += ["--threads", str(threads)]
        super().__init__("gunicorn", command, env=env, log_path=log_dir / "gunicorn.log", cwd=cwd)
        self.base_url = f"http://127.0.0.1:{port}"
        self.description = f"{workers} {worker_class} workers" + (
            f" x {threads} threads" if worker_class == "gthread" else ""
        )

    def start(self) -> None:
        super().start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.running:
                raise self.fail("exited at start")
            try:
                with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        log(f"gunicorn up at {self.base_url} ({self.description})")
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise self.fail("did not answer /healthz within 30 s")
