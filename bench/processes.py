"""The benchmark's gunicorn, in its own process group so that stopping it stops every worker,
stopped at exit whatever happens. Its mariadbd and redis-server are localservers': the
bench's alone, so that their counters (statements, commands) count this run's requests and
nothing else."""

import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.progress import log
from localservers.processes import ManagedProcess


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
