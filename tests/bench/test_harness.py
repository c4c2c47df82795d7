"""The benchmark harness's pure parts: percentiles, phases and target verdicts. Nothing here
measures or depends on speed; the figures are made up."""

from collections import Counter

from bench.load import Outcome, percentile, summarize
from bench.report import MISS, NOT_RUN, PASS, evaluate_targets, render


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def test_summarize_counts_statuses_and_splits_a_storm_at_the_last_success():
    # given: two successes, then three refusals, one server error and one transport error
    outcome = Outcome(
        latencies_ms=[10.0, 20.0, 5.0, 5.0, 5.0, 30.0, 40.0],
        finished_at=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
        success=[True, True, False, False, False, False, False],
        statuses=Counter({"201": 2, "409": 3, "500": 1, "error:ClientOSError": 1}),
        codes=Counter({"sold_out": 3}),
    )

    # when
    summary = summarize(outcome, elapsed=1.0, concurrency=4)

    # then
    assert summary["requests"] == 7
    assert summary["rps"] == 7.0
    assert summary["5xx"] == 1
    assert summary["transport_errors"] == 1
    assert summary["codes"] == {"sold_out": 3}
    assert summary["phases"]["until_last_2xx"]["requests"] == 2
    assert summary["phases"]["until_last_2xx"]["seconds"] == 0.2
    assert summary["phases"]["after_last_2xx"]["requests"] == 5


def test_summarize_has_no_phases_when_every_answer_is_alike():
    outcome = Outcome(
        latencies_ms=[1.0, 2.0],
        finished_at=[0.1, 0.2],
        success=[True, True],
        statuses=Counter({"200": 2}),
    )

    assert summarize(outcome, elapsed=0.2, concurrency=1)["phases"] is None


def load(rps: float, *, p50: float = 10.0, p99: float = 20.0, **extra) -> dict:
    return {
        "requests": 100,
        "concurrency": 64,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "statuses": {"201": 100},
        "codes": {},
        "5xx": 0,
        "transport_errors": 0,
        **extra,
    }


def exact_checks() -> dict:
    return {"checks": {"exact": True, "redis_counter": 1000}}


def verdicts(targets: list[dict]) -> dict[str, str]:
    return {target["target"]: target["verdict"] for target in targets}


def test_targets_are_ratios_to_the_baseline_and_to_the_redis_up_storm():
    results = {
        "baseline": load(1000.0),
        "storm": load(300.0, p99=251.0, **exact_checks()),
        "sold_out": load(500.0),
        "storm_redis_stopped": load(239.0, **exact_checks()),
        "scale": [
            {
                "existing_claims": 0,
                "sequential": load(1, p50=4.0),
                "concurrent": load(1, p50=40.0),
                "checks": {"all_201": True, "exact": True},
            },
            {
                "existing_claims": 1_000_000,
                "sequential": load(1, p50=5.0),
                "concurrent": load(1, p50=50.1),
                "checks": {"all_201": True, "exact": True},
            },
        ],
        "reads": {
            "templates": 1000,
            "coupons_held": 10000,
            "page_size": 20,
            "last_page": 500,
            "list": load(100.0, p50=49.9, queries=3, queries_small_data=3),
            "mine_first": load(100.0, p50=50.0, queries=3, queries_small_data=3),
            "mine_last": load(100.0, p50=10.0, queries=4, queries_small_data=3),
        },
    }

    result = verdicts(evaluate_targets(results))

    assert result["claim storm throughput"] == PASS  # 0.30 x
    assert result["claim storm p99"] == MISS  # 251 ms
    assert result["sold-out rejection throughput"] == PASS  # 0.50 x
    assert result["Redis stopped storm throughput"] == MISS  # 0.797 x
    assert result["claim p50 at 1,000,000 vs 0 claims (sequential)"] == PASS  # 1.25 x
    assert result["claim p50 at 1,000,000 vs 0 claims (16 connections)"] == MISS  # 1.2525 x
    assert result["GET /api/coupons first page p50"] == PASS
    assert result["GET /api/coupons/mine first page p50"] == MISS  # not under 50 ms
    assert result["list queries per request independent of data size"] == PASS
    assert result["mine queries per request independent of data size"] == MISS  # 3 vs 4


def test_missing_scenarios_are_not_run_rather_than_passed():
    result = verdicts(evaluate_targets({"baseline": load(1000.0)}))

    assert result["claim storm throughput"] == NOT_RUN
    assert result["GET /api/coupons first page p50"] == NOT_RUN


def test_render_prints_every_target_with_its_verdict():
    document = {
        "mode": "quick",
        "started_at": "2026-01-01T00:00:00+00:00",
        "seconds": 1.0,
        "machine": {
            "cores": 2,
            "cpu": "cpu",
            "platform": "linux",
            "mariadb": "10.11",
            "redis": "7",
            "python": "3.11",
        },
        "server": {
            "gunicorn": "2 gthread workers",
            "settings": "production",
            "primary_worker_class": "gthread",
        },
        "results": {"baseline": load(1000.0)},
    }
    document["targets"] = evaluate_targets(document["results"])

    text = render(document)

    assert "baseline GET /api/auth/me" in text
    for target in document["targets"]:
        assert target["target"] in text
