"""The shipped server opens no control socket (issue 31): gunicorn 27 listens by default on one
socket per OS user (~/.gunicorn/gunicorn.ctl), shared by every server that user runs on the
machine. Run for real: gunicorn with the shipped config, HOME in the test's directory."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localservers.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.servers


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_shipped_server_opens_no_control_socket(tmp_path):
    port = free_port()
    environment = {
        **os.environ,
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "GUNICORN_WORKERS": "1",
    }
    server = subprocess.Popen(
        [str(BIN / "gunicorn"), "--config", "config/gunicorn_conf.py",
         "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not listening(port):
            assert server.poll() is None, (
                server.stderr.read().decode()[-2000:] if server.stderr else ""
            )
            assert time.monotonic() < deadline, "gunicorn did not listen within 30 s"
            time.sleep(0.1)
        time.sleep(1)  # past the arbiter's start, where it would open the socket
        assert list(tmp_path.glob(".gunicorn/*")) == []
    finally:
        server.terminate()
        server.wait(timeout=30)
