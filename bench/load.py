"""The load generator: a separate process that sends a fixed list of requests over N concurrent
connections (asyncio + aiohttp) and prints a summary as JSON.

    python -m bench.load < plan.json > summary.json

The plan is {"base_url", "concurrency", "requests": [[method, path, token], ...],
"warmup": [[method, path, token], ...], "keep_latencies": bool}. Warm-up requests run first
over the same connections and are not counted. Every request is sent exactly once; each
connection takes the next one from a shared queue, so the offered load is "as fast as the
server answers" at a fixed number of requests in flight (closed loop)."""

import asyncio
import json
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

Request = tuple[str, str, str]  # method, path, bearer token


@dataclass
class Outcome:
    latencies_ms: list[float] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)  # seconds since the load began
    success: list[bool] = field(default_factory=list)  # answered 2xx
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
            outcome.finished_at.append(finished - load_started)
            outcome.success.append(status.startswith("2"))
            outcome.statuses[status] += 1
            if status.startswith("4") and body:
                try:
                    outcome.codes[str(json.loads(body).get("code"))] += 1
                except (ValueError, AttributeError):
                    outcome.codes["unparsable"] += 1

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return outcome, time.perf_counter() - load_started


def latency_figures(latencies_ms: list[float], seconds: float) -> dict:
    latencies = sorted(latencies_ms)
    return {
        "requests": len(latencies),
        "seconds": round(seconds, 3),
        "rps": round(len(latencies) / seconds, 1) if seconds > 0 else 0.0,
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p90_ms": round(percentile(latencies, 0.90), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(latencies[-1], 2) if latencies else 0.0,
    }


def phases(outcome: Outcome, elapsed: float) -> dict | None:
    """For a run that mixes successes and refusals (a claim storm): the figures up to the
    last 2xx answer (the selling phase) and after it (refusals only)."""
    if all(outcome.success) or not any(outcome.success):
        return None
    last_success = max(t for t, ok in zip(outcome.finished_at, outcome.success, strict=True) if ok)
    before = [
        latency
        for latency, t in zip(outcome.latencies_ms, outcome.finished_at, strict=True)
        if t <= last_success
    ]
    after = [
        latency
        for latency, t in zip(outcome.latencies_ms, outcome.finished_at, strict=True)
        if t > last_success
    ]
    return {
        "until_last_2xx": latency_figures(before, last_success),
        "after_last_2xx": latency_figures(after, elapsed - last_success),
    }


def summarize(outcome: Outcome, elapsed: float, concurrency: int) -> dict:
    statuses = dict(sorted(outcome.statuses.items()))
    server_errors = sum(n for status, n in statuses.items() if status.startswith("5"))
    transport_errors = sum(n for status, n in statuses.items() if status.startswith("error"))
    return {
        **latency_figures(outcome.latencies_ms, elapsed),
        "concurrency": concurrency,
        "statuses": statuses,
        "codes": dict(sorted(outcome.codes.items())),
        "5xx": server_errors,
        "transport_errors": transport_errors,
        "phases": phases(outcome, elapsed),
    }


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
    summary = summarize(outcome, elapsed, concurrency)
    if plan.get("keep_latencies"):
        summary["latencies_ms"] = outcome.latencies_ms
    return summary


def main() -> None:
    plan = json.load(sys.stdin)
    json.dump(asyncio.run(run_plan(plan)), sys.stdout)


if __name__ == "__main__":
    main()
