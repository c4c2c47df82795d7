"""The load generator: a separate process that sends a fixed list of requests over N concurrent
connections (asyncio + aiohttp) and prints a summary as JSON.

    python -m bench.load < plan.json > summary.json

The plan is {"base_url", "concurrency", "requests": [[method, path, token], ...],
"warmup": [[method, path, token], ...]}. Warm-up requests run first over the same connections
and are not counted. Every request is sent exactly once; each connection takes the next one
from a shared queue, so the offered load is "as fast as the server answers" at a fixed number
of requests in flight (closed loop). The output is raw (every latency, seconds, statuses,
codes); the harness turns one or more outputs into a Load with `to_load`.

Used for the scale and read rows (1 and 16 connections), where per-request latencies are
pooled across rounds; the throughput rows go through wrk (bench.wrk), which costs far less
CPU per request."""

import asyncio
import json
import math
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.results import Load

Request = tuple[str, str, str]  # method, path, bearer token


@dataclass
class Outcome:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)  # the "code" of 4xx JSON bodies


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list (0.0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = math.ceil(round(fraction * len(sorted_values), 6))  # round: 0.99 * 100 is 99.00..01
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


async def send_all(
    session: aiohttp.ClientSession, base_url: str, requests: list[Request], concurrency: int
) -> tuple[Outcome, float]:
    queue: asyncio.Queue[Request] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    outcome = Outcome()
    load_started = time.perf_counter()

    async def connection() -> None:
        while True:
            try:
                method, path, token = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            headers = {"Authorization": f"Bearer {token}"}
            started = time.perf_counter()
            try:
                async with session.request(method, base_url + path, headers=headers) as response:
                    body = await response.read()
                    status = str(response.status)
            except (aiohttp.ClientError, TimeoutError) as error:
                status = f"error:{type(error).__name__}"
                body = b""
            finished = time.perf_counter()
            outcome.latencies_ms.append((finished - started) * 1000)
            outcome.statuses[status] += 1
            if status.startswith("4") and body:
                try:
                    outcome.codes[str(json.loads(body).get("code"))] += 1
                except (ValueError, AttributeError):
                    outcome.codes["unparsable"] += 1

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return outcome, time.perf_counter() - load_started


def to_load(runs: list[dict], *, requests: int, concurrency: int) -> Load:
    """One Load from the raw output of one or more runs at the same concurrency (latencies
    pooled, seconds added), as bench.scale pools its rounds."""
    latencies = sorted(latency for run in runs for latency in run["latencies_ms"])
    seconds = sum(run["seconds"] for run in runs)
    statuses: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    for run in runs:
        statuses.update(run["statuses"])
        codes.update(run["codes"])
    answered = sum(n for status, n in statuses.items() if not status.startswith("error"))
    return Load(
        generator="aiohttp",
        requests=requests,
        answered=answered,
        concurrency=concurrency,
        seconds=round(seconds, 3),
        rps=round(len(latencies) / seconds, 1) if seconds > 0 else 0.0,
        p50_ms=round(percentile(latencies, 0.50), 2),
        p90_ms=round(percentile(latencies, 0.90), 2),
        p99_ms=round(percentile(latencies, 0.99), 2),
        max_ms=round(latencies[-1], 2) if latencies else 0.0,
        statuses={status: n for status, n in sorted(statuses.items()) if status[0].isdigit()},
        codes=dict(sorted(codes.items())),
    )


async def run_plan(plan: dict) -> dict:
    concurrency = int(plan["concurrency"])
    base_url = plan["base_url"].rstrip("/")
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        warmup = [tuple(item) for item in plan.get("warmup", [])]
        if warmup:
            await send_all(session, base_url, warmup, concurrency)
        requests = [tuple(item) for item in plan["requests"]]
        outcome, elapsed = await send_all(session, base_url, requests, concurrency)
    return {
        "latencies_ms": outcome.latencies_ms,
        "seconds": elapsed,
        "statuses": dict(outcome.statuses),
        "codes": dict(outcome.codes),
    }


def run(
    base_url: str,
    requests: list[Request],
    *,
    concurrency: int,
    warmup: list[Request] | None = None,
) -> dict:
    """Run one plan in a separate `python -m bench.load` process; return its raw output."""
    plan = {
        "base_url": base_url,
        "concurrency": concurrency,
        "requests": requests,
        "warmup": warmup or [],
    }
    process = subprocess.run(
        [sys.executable, "-m", "bench.load"],
        input=json.dumps(plan),
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=300,
    )
    if process.returncode != 0:
        raise RuntimeError(f"load generator failed:\n{process.stderr[-3000:]}")
    return json.loads(process.stdout)


def main() -> None:
    plan = json.load(sys.stdin)
    json.dump(asyncio.run(run_plan(plan)), sys.stdout)


if __name__ == "__main__":
    main()
