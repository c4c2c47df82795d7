"""The shipped server is the tested server (SPEC section 19): `make run` and the image start
gunicorn from one config file, and that command, with every timeout at its shipped default,
keeps /healthz answering within a second while its database is frozen under claims."""

import runpy
import time

import pytest
from gunicorn.workers.gthread import ThreadWorker

from config.gunicorn_worker import HealthReservedWorker
from localservers.waiting import wait_until
from tests.support.shipped_server import (
    PROBERS,
    PROBES_EACH,
    REPO,
    ClaimStorm,
    dockerfile_command,
    option,
    probe_through_a_freeze_under_a_storm,
    request,
    serve_script_command,
    shipped_app,
)

GUNICORN_CONFIG = "config/gunicorn_conf.py"
FREEZE_SECONDS = 35  # longer than gunicorn's 30 s worker timeout and every database timeout


def test_make_run_and_the_image_start_gunicorn_from_the_one_config_file():
    image, make_run = dockerfile_command(), serve_script_command()

    assert option(image, "--config") == GUNICORN_CONFIG
    assert option(make_run, "--config") == GUNICORN_CONFIG
    # Nothing that decides how requests are served is overridden on either command line.
    for command in (image, make_run):
        for setting in ("--worker-class", "-k", "--threads", "--timeout", "--graceful-timeout"):
            assert option(command, setting) is None, (command, setting)
    shipped = runpy.run_path(str(REPO / GUNICORN_CONFIG))
    assert shipped["wsgi_app"] == "config.wsgi:application"
    # gthread's worker, with threads of its own for /healthz (decision 0644).
    assert shipped["worker_class"] == "config.gunicorn_worker.HealthReservedWorker"
    assert issubclass(HealthReservedWorker, ThreadWorker)
    assert shipped["threads"] >= 4


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
    app's port gunicorn's threads of its own answer (decision 0644), on the probes' port their
    own listener (decision 1032)."""
    with shipped_app(tmp_path, own_redis.url, dockerfile_command()) as app:
        run = probe_through_a_freeze_under_a_storm(app, (app.port, app.probe_port))

    print(f"app's port: {run.said(app.port)}; probes' port: {run.said(app.probe_port)}")  # -s
    for port in (app.port, app.probe_port):
        assert run.slow(port) == [], run.said(port)
        assert len(run.probes[port]) == PROBERS * PROBES_EACH
        assert {answer.status for answer in run.probes[port]} <= {200, 503}
    assert run.claims.failures == []
    assert {answer.status for answer in run.claims.answers} <= {201, 503}
