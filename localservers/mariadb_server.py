"""A mariadbd of our own: its own data directory and port, root without a password, so that
a test or a drill may stop, kill, freeze (SIGSTOP) and thaw it and a bench may read its
counters. The shared MariaDB is never touched this way."""

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import MySQLdb

from localservers.ports import free_port
from localservers.processes import ManagedProcess
from localservers.waiting import wait_until

# A small server: several run at once beside the shared one.
SMALL = ("--innodb-buffer-pool-size=32M",)
# Configured like the shared development server (the bench measures against it): a 128 MB
# buffer pool, a 96 MB redo log, O_DIRECT, every commit flushed.
LIKE_THE_SHARED_SERVER = (
    "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=96M",
    "--innodb-flush-method=O_DIRECT", "--innodb-flush-log-at-trx-commit=1",
    "--max-connections=200",
)  # fmt: skip


class MariaDBServer(ManagedProcess):
    """Socket, pid file and log under `directory`, the data in `datadir` (directory/data, made
    by the first start, unless given: a backup restored elsewhere). `options` are added to the
    command line; one that starts a binary log (--log-bin) replaces the default --skip-log-bin."""

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        *,
        datadir: Path | None = None,
        options: Sequence[str] = SMALL,
    ):
        self.port = port or free_port()
        self.directory = directory
        self.datadir = datadir or directory / "data"
        # Temporary tables in a folder of its own: in the shared /tmp, two servers installing at
        # once (tests in loops side by side) lost each other's files ("Could not remove
        # temporary table '/tmp/#sql-temptable-...'", then mariadb-install-db aborted).
        self.tmpdir = directory / "tmp"
        binary_log = any(option.startswith("--log-bin") for option in options)
        command = [
            shutil.which("mariadbd") or "/usr/sbin/mariadbd", "--no-defaults",
            f"--datadir={self.datadir}", f"--tmpdir={self.tmpdir}", f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={directory / 'mariadbd.sock'}", f"--pid-file={directory / 'mariadbd.pid'}",
            "--user=root", "--performance-schema=OFF",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
            *([] if binary_log else ["--skip-log-bin"]), *options,
        ]  # fmt: skip
        super().__init__("mariadbd", command, log_path=directory / "mariadbd.log")

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def install(self) -> None:
        """A fresh data directory (mariadb-install-db), once."""
        if self.datadir.exists():
            return
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [
                "mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                f"--tmpdir={self.tmpdir}", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db",
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {result.stderr[-2000:]}")

    def start(self) -> None:
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        self.install()
        super().start()

        def accepting() -> bool:
            if not self.running:
                raise self.fail("exited at start")
            self.connect().close()
            return True

        wait_until(
            accepting,
            timeout=60,
            what=f"mariadbd on port {self.port} to accept a connection",
            ignoring=(MySQLdb.OperationalError,),
        )

    def stop(self, timeout: float = 60.0) -> None:
        """A clean shutdown (SIGTERM), as a restart would do; InnoDB may take a while."""
        super().stop(timeout=timeout)

    def connect(self, database: str | None = None) -> MySQLdb.Connection:
        options = {"database": database} if database else {}
        return MySQLdb.connect(
            host="127.0.0.1", port=self.port, user="root", connect_timeout=2, **options
        )

    def execute(self, *statements: str) -> list[tuple]:
        """Each statement on one connection; the last one's rows."""
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
                return list(cursor.fetchall())
        finally:
            connection.close()
