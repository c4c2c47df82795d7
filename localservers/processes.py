"""A child process in a session of its own (its own process group), so that stopping it stops
every child it started, stopped at interpreter exit whatever happens; and the record of a
process that outlives the Python process that started it (ProcessRecord)."""

import atexit
import os
import signal
import subprocess
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ProcessRecord:
    """A process as it was started: its pid and its start time (field 22 of /proc/<pid>/stat,
    clock ticks after boot). A pid alone may name another process once pids wrap (pid_max is
    32768 here, and a test run goes round it); the pair names one process for the machine's
    life. Written by whoever started the process, in a file of its own that the process never
    rewrites (mariadbd empties and rewrites its own pid file while running)."""

    pid: int
    started: int

    @classmethod
    def of(cls, pid: int) -> "ProcessRecord | None":
        """The record of the running process `pid` (None: no such process)."""
        stat = _stat_fields(pid)
        return None if stat is None else cls(pid, int(stat[19]))

    def alive(self) -> bool:
        """Still this process and running; a zombie (killed, not yet reaped) is dead."""
        stat = _stat_fields(self.pid)
        return stat is not None and stat[0] not in ("Z", "X") and int(stat[19]) == self.started

    def send(self, signum: int, *, group: bool = False) -> bool:
        """Signal this process (or the process group it leads) only while it is still this
        process: a pidfd taken first holds it, so that the check and the signal name the same
        one. Whether it was sent."""
        try:
            handle = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return False
        try:
            if not self.alive():
                return False
            if group and os.getpgid(self.pid) == self.pid:
                os.killpg(self.pid, signum)
            else:
                signal.pidfd_send_signal(handle, signum)
            return True
        except ProcessLookupError:
            return False
        finally:
            os.close(handle)

    def save(self, path: Path) -> None:
        """Written whole or not at all (a rename): a reader never sees it half written."""
        partial = path.with_name(path.name + ".partial")
        partial.write_text(f"{self.pid} {self.started}\n")
        os.replace(partial, path)

    @classmethod
    def load(cls, path: Path, *, patience: float = 0.5) -> "ProcessRecord | None":
        """The record in `path`; None when there is none. A file that does not parse is read
        again for up to `patience` seconds before it counts as none: an empty file means
        "look again", never "dead"."""
        deadline = time.monotonic() + patience
        while True:
            try:
                pid, started = path.read_text().split()
                return cls(int(pid), int(started))
            except FileNotFoundError:
                return None
            except (OSError, ValueError):
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.01)


def record_alive(record: ProcessRecord | None) -> bool:
    return record is not None and record.alive()


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (field 3 onwards), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
