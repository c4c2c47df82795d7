"""The app's server (config/serve.py) serving the app from the test database, for tests that
need HTTP as clients see it (nginx in front, schemathesis). Data must be committed to be seen:
use it from tests marked `django_db(transaction=True)` or with rows made outside a test
transaction."""

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from localservers.ports import free_port
from localservers.waiting import wait_until

BASE_DIR = Path(__file__).resolve().parents[2]


def run_database_url() -> str:
    """The URL of the database this test run uses (pytest-django's test_<name>)."""
    db = connection.settings_dict
    credentials = urllib.parse.quote(db["USER"] or "root", safe="")
    if db["PASSWORD"]:
        credentials += ":" + urllib.parse.quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    return f"mysql://{credentials}@{host}:{db['PORT'] or 3306}/{db['NAME']}"


@contextmanager
def app_serving(
    log_path: Path, *, workers: int = 2, environment: dict[str, str] | None = None
) -> Iterator[str]:
    """The shipped server with `workers` workers on a free port, test settings, the test
    database and this test's Redis prefix, plus `environment`. Yields the base URL; stops the
    whole process group afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": run_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "COUPON_REDIS_PREFIX": settings.COUPON_REDIS_PREFIX,
        **(environment or {}),
    }
    command = [
        sys.executable, "-m", "config.serve",
        "--bind", f"127.0.0.1:{port}",
        "--workers", str(workers),
    ]  # fmt: skip
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(base_url + "/healthz", process, log_path)
        yield base_url
    finally:
        stop_process_group(process)


def wait_until_answering(url: str, process: subprocess.Popen, log_path: Path) -> None:
    def answering() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"server exited at start:\n{log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answered

    try:
        wait_until(answering, timeout=30, what=f"{url} to answer", ignoring=(OSError,))
    except TimeoutError as timeout:
        raise TimeoutError(f"{timeout}:\n{log_path.read_text(errors='replace')}") from None


def stop_process_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
