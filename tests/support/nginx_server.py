"""Debian's nginx running the shipped config (deploy/nginx/coupons.conf.template) in front of
an upstream, as the nginx image would render and run it."""

import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from localservers.ports import free_port
from localservers.waiting import wait_until
from tests.support.live_server import BASE_DIR, stop_process_group

TEMPLATE = BASE_DIR / "deploy" / "nginx" / "coupons.conf.template"
# What docker-compose.yml gives the template when nothing is set: nginx is the edge.
NO_TRUSTED_FRONT = "0.0.0.0/32"


def render_template(text: str, values: dict[str, str]) -> str:
    """What the nginx image's envsubst step does: replace ${NAME} for the variables given and
    leave every other `$` (nginx's own variables) alone."""
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    left = re.findall(r"\$\{\w+\}", text)
    assert not left, f"placeholders without a value: {left}"
    return text


NGINX_CONF = """\
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/coupons.conf;
}}
"""


def nginx_binary() -> str:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        pytest.fail("nginx is not installed; run scripts/ensure-test-deps (make test does)")
    return binary


@contextmanager
def nginx_serving(upstream: str, *, trusted_front: str = NO_TRUSTED_FRONT) -> Iterator[str]:
    """Debian's nginx, the repo's template rendered for `upstream`, on a free port; not a
    daemon, pid and temp files in a directory of its own. Yields the base URL."""
    # Not under pytest's tmp_path: nginx's workers run as `nobody` (we are root) and must
    # reach their temp directories, which pytest's 0700 parents would forbid.
    directory = Path(tempfile.mkdtemp(prefix="coupons-nginx-"))
    directory.chmod(0o755)
    port = free_port()
    (directory / "coupons.conf").write_text(
        render_template(
            TEMPLATE.read_text(),
            {
                "APP_UPSTREAM": upstream,
                "LISTEN_PORT": f"127.0.0.1:{port}",
                "TRUSTED_FRONT": trusted_front,
            },
        )
    )
    (directory / "nginx.conf").write_text(NGINX_CONF.format(dir=directory))
    process = subprocess.Popen(
        [nginx_binary(), "-p", str(directory), "-c", str(directory / "nginx.conf"),
         "-e", str(directory / "error.log")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:

        def listening() -> bool:
            if process.poll() is not None:
                log = (directory / "error.log").read_text(errors="replace")
                raise RuntimeError(f"nginx exited at start:\n{log}")
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True

        wait_until(
            listening, timeout=10, what=f"nginx on port {port}", interval=0.05, ignoring=(OSError,)
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(process)
        shutil.rmtree(directory, ignore_errors=True)
