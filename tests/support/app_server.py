"""The app's server (config/serve.py) in a process of its own, on a free port, against the test
database: for tests that need several app processes sharing one database and one Redis."""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from django.db import connection

from localservers.ports import free_port
from localservers.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


class AppServer:
    def __init__(self, *, environment: dict[str, str], log: Path, threads: int = 4):
        self.port = free_port()
        self.log = log
        self.base = f"http://127.0.0.1:{self.port}"
        database = connection.settings_dict
        self.environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            # The database the test runs on (pytest-django's test database).
            "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 3306}/{database['NAME']}",
            "LOG_LEVEL": "WARNING",
            **environment,
        }
        self.threads = threads
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                # The shipped server (config/serve.py), sized for the test.
                sys.executable, "-m", "config.serve",
                "--bind", f"127.0.0.1:{self.port}",
                "--workers", "1",
                "--threads", str(self.threads),
            ],
            cwd=ROOT,
            env=self.environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()  # the child holds its own copy
        process = self.process

        def answering() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()[-2000:]}")
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=5):
                return True

        # OSError: refused while booting, or a timeout on a busy machine
        wait_until(
            answering,
            timeout=START_TIMEOUT,
            what=f"the server on port {self.port} to answer",
            ignoring=(OSError,),
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def post(self, path: str, token: str) -> tuple[int, dict]:
        """POST with a Bearer token; (status, JSON body)."""
        request = urllib.request.Request(
            f"{self.base}{path}", method="POST", headers={"Authorization": f"Bearer {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
