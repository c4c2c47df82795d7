"""The pure selling phase (SPEC section 14): every request a new user on a template with room
for all of them, so every answer should be 201 and every claim takes the hot row."""

from bench.harness import Harness
from bench.progress import log
from bench.results import ClaimRow
from bench.scenarios.claims import claim_path, measure


def run(harness: Harness) -> ClaimRow:
    from bench import seed

    sizes = harness.sizes
    total = 2 * (sizes.selling_warmup + sizes.selling_requests)  # room to spare
    template_id = seed.create_template("selling", total=total)
    warmup = [user.token for user in harness.users("selling-warmup", sizes.selling_warmup)]
    tokens = [user.token for user in harness.users("selling", sizes.selling_requests)]
    log(
        f"[selling] {sizes.selling_warmup} warm-up claims, then {len(tokens)} new users claim"
        f" template {template_id} (total={total}) at c={sizes.concurrency}"
    )
    # The warm-up's claims stay (rows_before): exactness counts them too.
    harness.warm_up("POST", claim_path(template_id), warmup, requests=len(warmup))
    return measure(
        harness,
        "selling",
        template_id=template_id,
        tokens=tokens,
        rows_before=len(warmup),
        expected_201=len(tokens),
        redis_up=True,
    )
