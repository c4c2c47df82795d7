"""The benchmark harness's own logic: wrk sends each request exactly once with its own token,
the figures are parsed and pooled right, exactness is judged in one place, every row and
target is printed. Nothing here measures or depends on speed; the figures are made up
(tests/bench/test_targets.py judges the targets)."""

import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import exactness, profiling, wrk
from bench.harness import QUICK
from bench.load import percentile, to_load
from bench.report import render
from bench.results import (
    CpuShare,
    Machine,
    Profile,
    RunDocument,
    Server,
)
from bench.targets import judge
from tests.support.bench_results import answers, facts, full_results

# --- wrk against a real HTTP server ---------------------------------------------------------


class RecordingHandler(BaseHTTPRequestHandler):
    """Answers 201 to tokens ending in an even digit, 409 sold_out to the others, and records
    every request's method, path and Authorization header."""

    protocol_version = "HTTP/1.1"  # keep-alive, as gunicorn's gthread workers
    disable_nagle_algorithm = True
    seen: list[tuple[str, str, str]]
    seen_lock = threading.Lock()

    def answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        authorization = self.headers.get("Authorization", "")
        with self.seen_lock:
            self.seen.append((self.command, self.path, authorization))
        if int(authorization[-1]) % 2 == 0:
            status, body = 201, b'{"id": 1}'
        else:
            status, body = 409, b'{"code": "sold_out", "detail": "gone", "fields": {}}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    seen: list[tuple[str, str, str]] = []
    handler = type("Handler", (RecordingHandler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_wrk_sends_every_token_exactly_once_and_counts_every_answer(recording_server, tmp_path):
    # given: one token per request
    base_url, seen = recording_server
    tokens = [f"token-{index}" for index in range(300)]

    # when
    load = wrk.run(
        base_url + "/api/coupons/7/claim",
        method="POST",
        tokens=tokens,
        requests=300,
        concurrency=8,
        workdir=tmp_path,
    )

    # then: 300 requests reached the server, one per token, and wrk saw every answer
    assert len(seen) == 300
    assert Counter(seen) == Counter(
        ("POST", "/api/coupons/7/claim", f"Bearer {token}") for token in tokens
    )
    assert load.generator == "wrk"
    assert (load.requests, load.answered, load.missing) == (300, 300, 0)
    assert load.statuses == {"201": 150, "409": 150}
    assert load.codes == {"sold_out": 150}
    assert load.concurrency == 8
    assert load.seconds > 0 and load.seconds_to_last_2xx is not None
    assert 0 < load.p50_ms <= load.p99_ms <= load.max_ms
    assert list(tmp_path.iterdir()) == []  # the tokens file and the marker are cleaned up


def test_wrk_cycles_through_fewer_tokens_than_requests(recording_server, tmp_path):
    base_url, seen = recording_server
    tokens = ["a0", "b2", "c4"]

    load = wrk.run(
        base_url + "/api/auth/me",
        method="GET",
        tokens=tokens,
        requests=30,
        concurrency=4,
        workdir=tmp_path,
    )

    assert Counter(auth for _, _, auth in seen) == {
        "Bearer a0": 10,
        "Bearer b2": 10,
        "Bearer c4": 10,
    }
    assert {method for method, _, _ in seen} == {"GET"}
    assert load.answered == 30 and load.statuses == {"201": 30}


def test_parse_output_reads_plan_lua_figures():
    stdout = (
        "Running 1m test @ http://127.0.0.1:1/x\n"
        '{"answered": 4, "seconds": 2.0, "seconds_to_last_2xx": -1.000000, "statuses":'
        ' {"409": 3, "500": 1}, "codes": {"sold_out": 3}, "errors": {"connect": 0, "read": 0,'
        ' "write": 0, "timeout": 0}, "latency_us": {"p50": 1500, "p90": 2000, "p99": 2500,'
        ' "max": 3000, "mean": 1800.0}}\n'
    )

    load = wrk.parse_output(stdout, requests=5, concurrency=2)

    assert load.rps == 2.0
    assert (load.p50_ms, load.p90_ms, load.p99_ms, load.max_ms) == (1.5, 2.0, 2.5, 3.0)
    assert load.missing == 1
    assert load.server_errors == 1
    assert load.seconds_to_last_2xx is None
    assert load.rps_to_last_2xx is None


def test_parse_output_without_figures_says_what_wrk_printed():
    with pytest.raises(RuntimeError, match="unable to connect"):
        wrk.parse_output("", requests=1, concurrency=1, stderr="unable to connect to 127.0.0.1")


# --- pooling the aiohttp process's raw runs -------------------------------------------------


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def test_to_load_pools_rounds_and_counts_transport_errors_as_missing():
    first = {"latencies_ms": [1.0, 3.0], "seconds": 1.0, "statuses": {"201": 2}, "codes": {}}
    second = {
        "latencies_ms": [2.0, 4.0, 9.0],
        "seconds": 1.5,
        "statuses": {"201": 1, "409": 1, "error:ClientOSError": 1},
        "codes": {"sold_out": 1},
    }

    load = to_load([first, second], requests=5, concurrency=16)

    assert load.generator == "aiohttp"
    assert (load.requests, load.answered, load.missing) == (5, 4, 1)
    assert load.seconds == 2.5
    assert load.rps == 2.0  # 5 latencies in 2.5 s
    assert (load.p50_ms, load.max_ms) == (3.0, 9.0)
    assert load.statuses == {"201": 3, "409": 1}
    assert load.codes == {"sold_out": 1}


# --- exactness ------------------------------------------------------------------------------


def test_a_storm_whose_answers_rows_and_counters_agree_is_exact():
    verdict = exactness.check(
        load=answers({"201": 1000, "409": 4000}, {"sold_out": 4000}),
        facts=facts(1000),
        rows_before=0,
        expected_201=1000,
        redis_checked=True,
    )

    assert verdict.exact
    assert verdict.mismatches == ()
    assert verdict.expected_rows == 1000


def test_exactness_names_every_disagreement():
    # given: one request unanswered, one 409 that is not sold_out, a claimed_count and a Redis
    # counter one over, and the sold-out row's rows_before counted in
    verdict = exactness.check(
        load=answers(
            {"201": 0, "409": 4},
            {"sold_out": 3, "limit_reached": 1},
            requests=5,
        ),
        facts=facts(1000, claimed=1001, redis=1001),
        rows_before=1000,
        expected_201=0,
        redis_checked=True,
    )

    assert not verdict.exact
    assert verdict.mismatches == (
        "unanswered requests 1 != 0",
        "409 codes {'sold_out': 3, 'limit_reached': 1} != {'sold_out': 4}",
        "claimed_count 1001 != 1000",
        "Redis counter 1001 != 1000",
    )


def test_exactness_skips_the_redis_counter_when_not_checked():
    verdict = exactness.check(
        load=answers({"201": 10}),
        facts=facts(15, redis=0),
        rows_before=5,
        expected_201=10,
        redis_checked=False,
    )

    assert verdict.exact


def test_a_selling_phase_with_a_refusal_is_not_exact():
    verdict = exactness.check(
        load=answers({"201": 9, "409": 1}, {"sold_out": 1}),
        facts=facts(9),
        rows_before=0,
        expected_201=10,
        redis_checked=True,
    )

    assert verdict.mismatches == (
        "201 answers 9 != 10",
        "rows 9 != 10",
        "distinct users 9 != 10",
        "claimed_count 9 != 10",
        "Redis counter 9 != 10",
    )


# --- targets and the table ------------------------------------------------------------------


def test_render_prints_every_row_and_every_target_and_the_json_round_trips():
    results = full_results()
    targets = judge(results)
    document = RunDocument(
        started_at="2026-01-01T00:00:00+00:00",
        seconds=1.0,
        command="python -m bench.run --quick",
        mode="quick",
        sizes=QUICK,
        machine=Machine(
            cpu="cpu",
            cores=2,
            platform="linux",
            python="3.11",
            mariadb="10.11",
            redis="7",
            wrk="wrk 4.1.0",
        ),
        server=Server(
            description="gunicorn, 2 gthread workers", server="gthread", settings="production"
        ),
        results=results,
        targets=tuple(targets),
    )

    text = render(document)

    for label in (
        "baseline GET /api/auth/me",
        "list GET /api/coupons (page of 20)",
        "work per request (read from the servers)",
        "selling phase (all new users, room left)",
        "the same through HAProxy + 3 Galera nodes",
        "selling phase, Galera",
        "mixed claim storm, Redis up",
        "claims on the sold-out template",
        "mixed claim storm, Redis stopped",
        "1,000,000 existing claims",
        "GET /api/coupons/mine p500 (last)",
    ):
        assert label in text
    for target in targets:
        assert target.target in text
    written = json.loads(json.dumps(asdict(document)))
    assert written["results"]["selling"]["load"]["rps"] == 499.0
    # The JSON keeps the shape it had when these were dicts (older result files compare).
    assert list(written) == [
        "started_at",
        "seconds",
        "command",
        "mode",
        "sizes",
        "machine",
        "server",
        "results",
        "targets",
    ]
    assert list(written["machine"]) == [
        "cpu",
        "cores",
        "platform",
        "python",
        "mariadb",
        "redis",
        "wrk",
    ]
    assert list(written["server"]) == ["description", "server", "settings"]
    assert written["sizes"] == json.loads(json.dumps(asdict(QUICK)))
    assert written["targets"][0] == asdict(targets[0])


def test_profile_summary_shares_request_time_and_writes_the_old_json_shape(tmp_path):
    # given: a speedscope file with three request samples (two in the claim's decision, one
    # of them under the claim's lean route) and an idle sample outside any request
    frames = [
        {"name": "BaseHandler.get_response", "file": "base.py"},
        {"name": "decide", "file": "decision.py"},
        {"name": "wait", "file": "threading.py"},
        {"name": "ClaimRoute.__call__", "file": "claim_route.py"},
    ]
    speedscope = {
        "shared": {"frames": frames},
        "profiles": [{"samples": [[0, 1], [0], [2], [3, 1]], "weights": [0.3, 0.1, 5.0, 0.4]}],
    }
    path = tmp_path / "run-storm.speedscope.json"
    path.write_text(json.dumps(speedscope))

    # when
    profile = profiling.summarize(path)

    # then
    assert isinstance(profile, Profile)
    written = json.loads(json.dumps(asdict(profile)))
    assert list(written) == ["file", "request_thread_seconds", "markers", "top_self"]
    assert written["file"] == "run-storm.speedscope.json"
    assert written["request_thread_seconds"] == 0.8
    assert written["markers"]["claim: decision transaction (row lock, insert, commit)"] == 0.875
    assert written["top_self"] == [
        ["decide (decision.py)", 0.875],
        ["BaseHandler.get_response (base.py)", 0.125],
    ]


def test_cpu_per_answer_is_cores_times_seconds_over_answers():
    cpu = CpuShare(app=0.5, mariadb=0.25, redis=0.0, load_generator=0.01, machine=2.0, other=1.24)
    load = replace(answers({"201": 100}), seconds=2.0, cpu=cpu)

    assert load.cpu_ms_per_answer("app") == 10.0  # 0.5 cores x 2 s / 100 answers
    assert load.cpu_ms_per_answer("app", "mariadb") == 15.0
    assert answers({"201": 100}).cpu_ms_per_answer("app") is None  # not metered
