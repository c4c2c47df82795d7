"""A child process in a session of its own (its own process group), so that stopping it stops
every child it started, stopped at interpreter exit whatever happens; and the two facts read
about processes that outlive the Python process that started them (pid files)."""

import atexit
import os
import signal
import subprocess
from pathlib import Path


class ManagedProcess:
    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ):
        self.name = name
        self.cwd = cwd
        self.command = command
        self.env = dict(os.environ) if env is None else env
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        atexit.register(self.stop)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
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
        """SIGTERM to the group (a frozen one is thawed first), SIGKILL after `timeout`."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL to the group: no shutdown, as when the machine dies."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)

    def freeze(self) -> None:
        """SIGSTOP: its sockets stay open and keep accepting, nothing answers."""
        if self.running:
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.running:
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGCONT)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def fail(self, reason: str) -> RuntimeError:
        return RuntimeError(f"{self.name} {reason}; last log lines:\n{self.log_tail()}")


def process_alive(pid: int | None) -> bool:
    """True for a running process; a zombie (killed, not yet reaped) counts as dead."""
    if pid is None:
        return False
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
