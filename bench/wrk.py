"""Throughput loads through wrk: a fixed number of requests, each with its own user's token,
over N keep-alive connections, from one C thread that costs the 2-core machine little CPU.

wrk only knows durations, so bench/wrk/plan.lua counts: it hands out exactly `requests`
requests, stops its thread when the last answer arrives and creates a marker file; this module
waits for the marker and ends wrk with SIGINT, and wrk's done() prints the figures as JSON."""

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from bench.results import Load

PLAN_SCRIPT = Path(__file__).resolve().parent / "wrk" / "plan.lua"
# wrk's latency histogram drops answers slower than its --timeout (they count as timeouts).
ANSWER_TIMEOUT_S = 30
# Only a load whose answers stop coming should reach this: a shared 2-core machine has served
# claims at 35 per second.
DEADLINE_BASE_S = 60
DEADLINE_MIN_RPS = 10


def executable() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk is not installed: run scripts/ensure-bench-deps (make bench does)")
    return found


def run(
    url: str,
    *,
    method: str,
    tokens: Sequence[str],
    requests: int,
    concurrency: int,
    workdir: Path,
) -> Load:
    """Send `requests` requests to `url`, request i with tokens[i % len(tokens)]. Gives up
    waiting for the last answers after DEADLINE_BASE_S + requests / DEADLINE_MIN_RPS seconds
    (they then show as missing)."""
    deadline_s = DEADLINE_BASE_S + requests / DEADLINE_MIN_RPS
    if not tokens:
        raise ValueError("no tokens")
    workdir.mkdir(parents=True, exist_ok=True)
    stamp = f"{os.getpid()}-{time.monotonic_ns()}"
    tokens_file = workdir / f"tokens-{stamp}.txt"
    done_file = workdir / f"done-{stamp}"
    tokens_file.write_text("\n".join(tokens) + "\n")
    path = "/" + url.split("://", 1)[1].split("/", 1)[1]
    command = [
        executable(),
        "-t1",
        f"-c{concurrency}",
        f"-d{int(deadline_s)}s",
        f"--timeout={ANSWER_TIMEOUT_S}s",
        "-s",
        str(PLAN_SCRIPT),
        url,
        "--",
        str(tokens_file),
        method,
        path,
        str(requests),
        str(done_file),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        give_up_at = time.monotonic() + deadline_s
        while not done_file.exists() and process.poll() is None and time.monotonic() < give_up_at:
            time.sleep(0.01)
        stdout, stderr = stop(process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        tokens_file.unlink(missing_ok=True)
        done_file.unlink(missing_ok=True)
    return parse_output(stdout, requests=requests, concurrency=concurrency, stderr=stderr)


def stop(process: subprocess.Popen) -> tuple[str, str]:
    """SIGINT ends wrk's sleep and makes it print done(); a signal that lands on a wrk thread
    that has not exited yet does not, so it is sent again before giving up with SIGKILL."""
    for _ in range(3):
        if process.poll() is not None:
            break
        process.send_signal(signal.SIGINT)
        try:
            return process.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            continue
    if process.poll() is None:
        process.kill()
    return process.communicate()


def parse_output(stdout: str, *, requests: int, concurrency: int, stderr: str = "") -> Load:
    """The Load from the JSON line plan.lua's done() prints (latencies in microseconds)."""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"wrk printed no figures:\n{stdout[-2000:]}\n{stderr[-2000:]}")
    figures = json.loads(lines[-1])
    latency = figures["latency_us"]
    answered = int(figures["answered"])
    seconds = float(figures["seconds"])
    to_last_2xx = float(figures["seconds_to_last_2xx"])
    return Load(
        generator="wrk",
        requests=requests,
        answered=answered,
        concurrency=concurrency,
        seconds=round(seconds, 3),
        rps=round(answered / seconds, 1) if seconds > 0 else 0.0,
        p50_ms=latency["p50"] / 1000,
        p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000,
        max_ms=latency["max"] / 1000,
        statuses=dict(sorted(figures["statuses"].items())),
        codes=dict(sorted(figures["codes"].items())),
        seconds_to_last_2xx=round(to_last_2xx, 3) if to_last_2xx >= 0 else None,
    )
