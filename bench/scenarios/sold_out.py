"""Claims on a sold-out template: the rejection path. Every answer must be 409 `sold_out`
and nothing may change (rows, claimed_count and the Redis counter stay at `total`)."""

from bench.harness import Harness
from bench.progress import log
from bench.results import ClaimRow
from bench.scenarios.claims import measure


def run(harness: Harness, *, template_id: int, total: int) -> ClaimRow:
    sizes = harness.sizes
    tokens = [user.token for user in harness.users("soldout", sizes.sold_out_requests)]
    log(f"[sold_out] {len(tokens)} more users claim sold-out template {template_id}")
    return measure(
        harness,
        "sold_out",
        template_id=template_id,
        tokens=tokens,
        rows_before=total,
        expected_201=0,
        redis_up=True,
    )
