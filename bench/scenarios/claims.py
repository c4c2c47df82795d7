"""What every claim scenario does around its load: profile it, count MariaDB's lock waits,
read the template back and judge exactness in the one place (bench.exactness)."""

from collections.abc import Sequence

from bench import exactness
from bench.harness import Harness
from bench.progress import log
from bench.results import ClaimRow


def claim_path(template_id: int) -> str:
    return f"/api/coupons/{template_id}/claim"


def measure(
    harness: Harness,
    name: str,
    *,
    template_id: int,
    tokens: Sequence[str],
    rows_before: int,
    expected_201: int,
    redis_up: bool,
) -> ClaimRow:
    """POST a claim for each token (one request per token) and check the template after."""
    from bench import seed

    counters_before = seed.server_counters()
    with harness.profiled(name) as profile:
        load = harness.throughput("POST", claim_path(template_id), tokens, requests=len(tokens))
    counters = seed.counters_delta(counters_before, seed.server_counters())
    facts = harness.claim_facts(template_id, read_redis=redis_up)
    verdict = exactness.check(
        load=load,
        facts=facts,
        rows_before=rows_before,
        expected_201=expected_201,
        redis_checked=redis_up,
    )
    row = ClaimRow(
        template_id=template_id,
        total=facts.total,
        redis_up=redis_up,
        load=load,
        exactness=verdict,
        mariadb_counters=counters,
        profile=profile.profile,
    )
    log(
        f"[{name}] {load.answered}/{load.requests} answered at c={load.concurrency}:"
        f" {load.rps:.0f} req/s, p50 {load.p50_ms:.1f} ms, p99 {load.p99_ms:.1f} ms,"
        f" statuses {dict(load.statuses)}, CPU {load.cpu};"
        f" {'exact' if verdict.exact else 'NOT EXACT: ' + '; '.join(verdict.mismatches)}"
    )
    return row
