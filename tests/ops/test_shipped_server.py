"""The shipped server is the tested server (SPEC section 19): `make run` and the image start
the server from one definition (config/serve.py), and that command, with every timeout at its
shipped default, keeps /healthz answering within a second while its database is frozen under
claims."""

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from granian.constants import Interfaces

from config import serve
from localservers.waiting import wait_until
from tests.support.shipped_server import (
    PROBERS,
    PROBES_EACH,
    ClaimStorm,
    dockerfile_command,
    option,
    probe_through_a_freeze_under_a_storm,
    request,
    serve_script_command,
    shipped_app,
)

FREEZE_SECONDS = 35  # longer than every database timeout, retries included


def test_make_run_and_the_image_start_the_one_served_definition():
    image, make_run = dockerfile_command(), serve_script_command()

    assert image[:3] == ["python", "-m", "config.serve"]
    assert make_run[:3] == ["$bin/python", "-m", "config.serve"]
    # Nothing that decides how requests are served is overridden on either command line.
    for command in (image, make_run):
        assert option(command, "--threads") is None, command
    shipped = serve.server(serve.arguments([]))
    assert shipped.target == "config.wsgi:application"
    assert shipped.interface == Interfaces.WSGI
    assert shipped.blocking_threads >= 4
    assert shipped.respawn_failed_workers  # a worker that dies is started again
    assert shipped.workers_kill_timeout == serve.GRACEFUL_SECONDS


@pytest.mark.servers
@pytest.mark.django_db  # the test database must exist for the fixtures; the app uses its own
def test_healthz_answers_within_a_second_throughout_a_database_freeze(tmp_path, own_redis):
    with shipped_app(tmp_path, own_redis.url, dockerfile_command()) as app:
        for _ in range(4):  # first-request imports in both workers
            request(app.port, "GET", "/healthz", {})
        with ClaimStorm(app.port, app.facts["template_id"], app.facts["tokens"]) as storm:
            wait_until(lambda: storm.created_since(0) >= 10, timeout=30, what="claims to work")

            app.database.freeze()
            health, asked_at = [], []
            frozen_at = time.monotonic()
            while time.monotonic() < frozen_at + FREEZE_SECONDS:
                asked_at.append(time.monotonic() - frozen_at)
                health.append(request(app.port, "GET", "/healthz", {}))
                time.sleep(0.25)
            app.database.thaw()

            thawed = len(storm.answers)
            wait_until(
                lambda: storm.created_since(thawed) >= 5, timeout=30, what="claims to recover"
            )
        # Each worker sees the database back with its next check (within a few seconds).
        wait_until(
            lambda: request(app.port, "GET", "/healthz", {}).status == 200,
            timeout=5,
            what="/healthz to see the database back",
        )

    slow = [answer for answer in health if answer.seconds >= 1]
    worst = max(answer.seconds for answer in health)
    claim_seconds = sorted(answer.seconds for answer in storm.answers)
    print(  # for docs/measurements (run with -s)
        f"healthz: {len(health)} calls, worst {worst:.3f} s; claims: {len(claim_seconds)}, "
        f"p99 {claim_seconds[int(len(claim_seconds) * 0.99)]:.2f} s, "
        f"worst {claim_seconds[-1]:.2f} s"
    )
    assert slow == [], f"{len(slow)} of {len(health)} over 1 s, worst {worst:.1f} s"
    assert len(health) >= FREEZE_SECONDS * 2
    # The database is seen down once it has said nothing for the slow grace (3 s, counted from
    # its last answer, at most a second before the freeze) and the answer's second in cache;
    # and it stays down.
    down_by = 3 + 1 + 1
    after_grace = [answer for answer, at in zip(health, asked_at, strict=True) if at >= down_by]
    assert {answer.status for answer in after_grace} == {503}
    assert {answer.body["status"] for answer in after_grace} == {"down"}
    assert storm.failures == []
    assert {answer.status for answer in storm.answers} <= {201, 503}


@pytest.mark.servers
@pytest.mark.django_db  # the test database must exist for the fixtures; the app uses its own
def test_healthz_answers_within_a_second_from_the_first_moment_of_a_freeze_under_a_storm(
    tmp_path, own_redis
):
    """Issue 21: with every request thread held by a claim stuck on the frozen database,
    /healthz used to wait for a free thread (15 of 64 probes over 1 s, worst 16.5 s). On the
    probes' own port (the image's PROBE_BIND) each worker answers on threads no request holds
    (decision 1032). The app's port, probed in the same freeze, shows what they are spared."""
    with shipped_app(tmp_path, own_redis.url, dockerfile_command()) as app:
        run = probe_through_a_freeze_under_a_storm(app, (app.probe_port, app.port))

    print(f"probes' port: {run.said(app.probe_port)}; app's port: {run.said(app.port)}")  # -s
    probes = run.probes[app.probe_port]
    assert run.slow(app.probe_port) == [], run.said(app.probe_port)
    assert len(probes) == PROBERS * PROBES_EACH
    assert {answer.status for answer in probes} <= {200, 503}
    assert run.claims.failures == []
    assert {answer.status for answer in run.claims.answers} <= {201, 503}


@pytest.mark.servers
@pytest.mark.django_db  # the test database must exist for the fixtures; the app uses its own
def test_sigterm_lets_the_claims_in_flight_finish_then_exits_cleanly(tmp_path, own_redis):
    """A deploy's SIGTERM while claims wait on the database: each is answered (its coupon
    given), none cut off, and the server exits 0 once they are. The database's timeouts are
    longer than the freeze here, so that a claim on a thread with no connection yet (connect
    2 s) cannot fail by itself on a loaded machine: only a cut could fail it."""
    patient = {"DB_CONNECT_TIMEOUT": "20", "DB_READ_TIMEOUT": "20", "DB_WRITE_TIMEOUT": "20"}
    with shipped_app(tmp_path, own_redis.url, dockerfile_command(), extra_env=patient) as app:
        path = f"/api/coupons/{app.facts['template_id']}/claim"
        tokens = app.facts["tokens"]
        for token in tokens[:4]:  # first-request imports in both workers
            request(app.port, "POST", path, {"Authorization": f"Bearer {token}"})

        app.database.freeze()
        with ThreadPoolExecutor(max_workers=4) as clients:
            in_flight = [
                clients.submit(request, app.port, "POST", path, {"Authorization": f"Bearer {t}"})
                for t in tokens[4:8]
            ]
            time.sleep(1)  # each is on the frozen database now
            app.process.send_signal(signal.SIGTERM)
            time.sleep(1)
            assert app.process.poll() is None  # still finishing them
            app.database.thaw()
            answers = [future.result() for future in in_flight]
        exit_code = app.process.wait(timeout=40)

    assert [answer.status for answer in answers] == [201] * 4
    assert exit_code == 0


def worker_pids(server_pid: int) -> set[int]:
    """The server's worker processes (its children)."""
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
    return {int(pid) for pid in children}


def workers_started(log: Path) -> int:
    """How many times a worker has said it started, in the server's log."""
    return sum("] Started worker-" in line for line in log.read_text().splitlines())


@pytest.mark.servers
@pytest.mark.django_db  # the test database must exist for the fixtures; the app uses its own
def test_a_worker_that_dies_is_started_again(tmp_path, own_redis):
    """A worker killed is replaced, and the server answers on both ports meanwhile from the
    other. (Each worker listens on its own socket: a connection the kernel had queued on the
    killed one is reset, decision 1033; the client tries again here.)"""
    with shipped_app(tmp_path, own_redis.url, dockerfile_command()) as app:
        wait_until(lambda: workers_started(app.log) == 2, timeout=30, what="both workers")
        killed = min(worker_pids(app.process.pid))

        os.kill(killed, signal.SIGKILL)

        wait_until(lambda: workers_started(app.log) == 3, timeout=30, what="another worker")
        assert killed not in worker_pids(app.process.pid)
        assert len(worker_pids(app.process.pid)) == 2
        for port in (app.port, app.probe_port):
            wait_until(
                lambda port=port: request(port, "GET", "/healthz", {}).status == 200,
                timeout=10,
                what="the server to answer",
                ignoring=(OSError,),
            )
