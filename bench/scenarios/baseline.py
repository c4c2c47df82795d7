"""The denominator of every "x baseline" ratio: `GET /api/auth/me`, the same JWT
authentication as a claim and nothing else, at the claim rows' concurrency."""

from bench.harness import Harness
from bench.progress import log
from bench.results import Load

PATH = "/api/auth/me"


def run(harness: Harness) -> Load:
    sizes = harness.sizes
    tokens = [user.token for user in harness.users("base", sizes.concurrency)]
    log(f"[baseline] GET {PATH} x{sizes.baseline_requests} at c={sizes.concurrency}")
    harness.warm_up("GET", PATH, tokens, requests=sizes.baseline_warmup)
    load = harness.throughput("GET", PATH, tokens, requests=sizes.baseline_requests)
    log(
        f"[baseline] {load.rps:.0f} req/s, p50 {load.p50_ms:.1f} ms, p99 {load.p99_ms:.1f} ms,"
        f" statuses {dict(load.statuses)}, CPU {load.cpu}"
    )
    return load
