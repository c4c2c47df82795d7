"""The shopper list under the baseline's load: `GET /api/coupons` (a full page of 20 public
templates) at the same concurrency and request count as the baseline, each request by one of
64 users in turn (SPEC section 15: >= 0.70 x the baseline, at most one statement more)."""

from bench.harness import Harness
from bench.progress import log
from bench.results import Load

PATH = "/api/coupons"
TEMPLATES = 20  # one full page


def run(harness: Harness) -> Load:
    from bench import seed

    sizes = harness.sizes
    seed.create_templates("shopper-list", TEMPLATES, total=1_000, per_user_limit=1)
    tokens = [user.token for user in harness.users("list", sizes.concurrency)]
    log(f"[list] GET {PATH} ({TEMPLATES}+ templates) x{sizes.baseline_requests}")
    harness.warm_up("GET", PATH, tokens, requests=sizes.baseline_warmup)
    load = harness.throughput("GET", PATH, tokens, requests=sizes.baseline_requests)
    log(
        f"[list] {load.rps:.0f} req/s, p50 {load.p50_ms:.1f} ms, p99 {load.p99_ms:.1f} ms,"
        f" statuses {dict(load.statuses)}, work {load.work}, CPU {load.cpu}"
    )
    return load
