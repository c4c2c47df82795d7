"""A mariadbd of the test's own, on a free port with its own data directory, that the test may
stop, freeze (SIGSTOP), thaw and kill. The shared MariaDB is never touched this way."""

import os
import signal
import subprocess
from pathlib import Path

import MySQLdb

from tests.support.redis_server import free_port
from tests.support.waiting import wait_until


class OwnMariaDB:
    def __init__(self, tmp_path: Path):
        self.port = free_port()
        self.dir = tmp_path / "mariadb"
        self.datadir = self.dir / "data"
        self.process: subprocess.Popen | None = None

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def install(self) -> None:
        """A fresh data directory; root may connect from 127.0.0.1 without a password."""
        self.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "mariadbd", "--no-defaults", f"--datadir={self.datadir}", f"--port={self.port}",
                "--bind-address=127.0.0.1", f"--socket={self.dir / 'mariadbd.sock'}",
                f"--pid-file={self.dir / 'mariadbd.pid'}", "--user=root", "--skip-log-bin",
                "--innodb-buffer-pool-size=32M", "--performance-schema=OFF",
                "--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "server.log", "ab"),  # noqa: SIM115 (the child keeps it)
        )  # fmt: skip
        process = self.process

        def accepting() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"mariadbd exited; see {self.dir / 'server.log'}")
            self.connect().close()
            return True

        wait_until(
            accepting,
            timeout=30,
            what=f"mariadbd on port {self.port} to start",
            ignoring=(MySQLdb.OperationalError,),
        )

    def connect(self, database: str | None = None) -> MySQLdb.Connection:
        options = {"database": database} if database else {}
        return MySQLdb.connect(
            host="127.0.0.1", port=self.port, user="root", connect_timeout=2, **options
        )

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), as a restart would do."""
        if self.process is not None:
            self.thaw()
            self.process.terminate()
            self.process.wait(timeout=60)
            self.process = None

    def kill(self) -> None:
        """SIGKILL: no shutdown, InnoDB recovers on the next start."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and the port keeps accepting, nothing answers."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGCONT)
