"""Claim latency on templates already holding 0 .. 1,000,000 claims, one connection and 16.

All the data is loaded first; then the measurements go round-robin over the templates
(ROUNDS rounds, each starting at a different template) and each template's latencies are
pooled, so that drift over time, such as InnoDB flushing the bulk load in the background,
falls on every template alike. Latency rather than throughput: the aiohttp process, which
keeps every latency, sends these."""

import time
from dataclasses import dataclass

from bench import exactness, load
from bench.harness import Harness
from bench.progress import log
from bench.results import ScaleRow
from bench.scenarios.claims import claim_path

WARMUP = 20  # claims on each template before the measured ones, not counted
ROUNDS = 3


@dataclass(frozen=True)
class Template:
    existing_claims: int
    template_id: int

    @property
    def path(self) -> str:
        return claim_path(self.template_id)


def run(harness: Harness) -> tuple[ScaleRow, ...]:
    sizes = harness.sizes
    templates = load_templates(harness)
    modes = {"sequential": 1, "concurrent": sizes.scale_concurrency}
    shares = {
        "sequential": sizes.scale_sequential // ROUNDS,
        "concurrent": sizes.scale_concurrent // ROUNDS,
    }

    def claims(template: Template, count: int) -> list[load.Request]:
        return [
            ("POST", template.path, user.token)
            for user in harness.users("scale", count, quiet=True)
        ]

    warmups = {template: claims(template, WARMUP) for template in templates}
    runs: dict[tuple[Template, str], list[dict]] = {}
    for round_number in range(ROUNDS):
        for template in templates[round_number:] + templates[:round_number]:
            for mode, concurrency in modes.items():
                raw = harness.latency_run(
                    claims(template, shares[mode]),
                    concurrency=concurrency,
                    warmup=warmups.pop(template, None),
                )
                runs.setdefault((template, mode), []).append(raw)
                log(
                    f"[scale {template.existing_claims} round {round_number + 1} {mode}]"
                    f" {len(raw['latencies_ms'])} claims in {raw['seconds']:.1f} s"
                )
    rows = []
    for template in templates:
        figures = {
            mode: load.to_load(
                runs[(template, mode)],
                requests=shares[mode] * ROUNDS,
                concurrency=concurrency,
            )
            for mode, concurrency in modes.items()
        }
        every_claim = load.to_load(
            runs[(template, "sequential")] + runs[(template, "concurrent")],
            requests=sum(shares.values()) * ROUNDS,
            concurrency=0,
        )
        verdict = exactness.check(
            load=every_claim,
            facts=harness.claim_facts(template.template_id, read_redis=False),
            rows_before=template.existing_claims + WARMUP,
            expected_201=every_claim.requests,
            # The existing claims were inserted behind Redis's back: its counter is not
            # expected to hold them.
            redis_checked=False,
        )
        rows.append(
            ScaleRow(
                existing_claims=template.existing_claims,
                template_id=template.template_id,
                sequential=figures["sequential"],
                concurrent=figures["concurrent"],
                exactness=verdict,
            )
        )
        log(
            f"[scale {template.existing_claims}] sequential p50"
            f" {figures['sequential'].p50_ms} ms, {sizes.scale_concurrency} connections p50"
            f" {figures['concurrent'].p50_ms} ms; exact {verdict.exact} {verdict.mismatches}"
        )
    return tuple(rows)


def load_templates(harness: Harness) -> list[Template]:
    from bench import seed

    sizes = harness.sizes
    most = max(sizes.scale_existing)
    started = time.monotonic()
    seed.insert_holders(most)
    log(f"[scale] inserted {most} holder users in {time.monotonic() - started:.1f} s")
    claims = sizes.scale_sequential + sizes.scale_concurrent
    templates = []
    for existing in sizes.scale_existing:
        template_id = seed.create_template(
            f"scale-{existing}", total=existing + WARMUP + claims + 100
        )
        started = time.monotonic()
        seed.insert_existing_claims(template_id, existing)
        log(
            f"[scale] template {template_id}: {existing} existing claims inserted in"
            f" {time.monotonic() - started:.1f} s"
        )
        templates.append(Template(existing_claims=existing, template_id=template_id))
    seed.analyze_tables()
    return templates
