"""scripts/serve (`make run`) runs the app's server, the scheduler and a Celery worker side by
side (issue 21: SIGTERM stopped the scheduler and left the server serving). Real processes: the
script, its scheduler, its worker and the server, on the test database and a Redis of the
test's own."""

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from django.db import connection

from localservers.ports import free_port
from localservers.waiting import wait_until
from tests.support.app_server import ROOT


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has stopped; only its parent has not read its status yet


def answering(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def served(tmp_path, own_redis):
    """scripts/serve on a free port with one worker; yields (process, port, its children)."""
    database = connection.settings_dict
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 3306}/{database['NAME']}",
        "REDIS_URL": own_redis.url,
        "LOG_LEVEL": "WARNING",
        "CELERY_QUEUE": f"serve-test-{port}",  # RabbitMQ is shared: a queue of its own
    }
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        ["scripts/serve", str(port), "1"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so that cleanup finds every child
    )
    log.close()
    try:
        wait_until(lambda: answering(port), timeout=60, what="the server to listen")
        wait_until(lambda: len(children_of(process.pid)) == 3, timeout=30, what="all children")
        yield process, port, children_of(process.pid)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever the test left of what it started
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def stopped_together(process, port, children, *, exit_code: int) -> None:
    assert process.wait(timeout=60) == exit_code
    wait_until(lambda: not any(map(alive, children)), timeout=30, what="every child to stop")
    assert not answering(port)


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)  # the test database the app runs on
def test_sigterm_stops_the_server_the_scheduler_and_the_worker_together(served):
    process, port, children = served

    process.send_signal(signal.SIGTERM)

    # A normal stop: 0, so `make run` prints no "Error 143".
    stopped_together(process, port, children, exit_code=0)


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("child", [b"run_scheduler", b"celery"], ids=["scheduler", "worker"])
def test_a_scheduler_or_worker_that_dies_takes_the_server_down_with_it(served, child):
    process, port, children = served
    [dying] = [pid for pid in children if child in cmdline(pid)]

    os.kill(dying, signal.SIGKILL)

    stopped_together(process, port, children, exit_code=1)


def cmdline(pid: int) -> bytes:
    return (Path("/proc") / str(pid) / "cmdline").read_bytes()


def test_make_run_says_its_port_is_taken_before_any_setup(tmp_path):
    """`make run` on a taken port stopped only after its whole setup (46 s on a fresh clone):
    the port is checked first, and nothing after it runs."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        ran = subprocess.run(
            ["make", "--no-print-directory", "-n", "run", f"PORT={port}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        checked = subprocess.run(
            ["make", "--no-print-directory", "-s", "port-free", f"PORT={port}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )

    assert ran.stdout.splitlines()[0] == f"scripts/port-free {port}"  # before the setup
    assert checked.returncode != 0
    assert f"Port {port} is taken" in checked.stderr
    assert f"PORT={port + 1} make run" in checked.stderr
