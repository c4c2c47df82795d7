"""Made-up bench figures for the bench's own tests (tests/bench/): loads, rows and a whole
run's results, none of them measured."""

from bench.results import (
    ClaimFacts,
    ClaimRow,
    Exactness,
    Load,
    ReadRow,
    Reads,
    Results,
    ScaleRow,
    Work,
)


def answers(statuses: dict[str, int], codes: dict[str, int] | None = None, **extra) -> Load:
    answered = sum(statuses.values())
    return Load(
        generator="wrk",
        requests=extra.pop("requests", answered),
        answered=answered,
        concurrency=64,
        seconds=1.0,
        rps=extra.pop("rps", float(answered)),
        p50_ms=extra.pop("p50", 10.0),
        p90_ms=15.0,
        p99_ms=extra.pop("p99", 20.0),
        max_ms=30.0,
        statuses=statuses,
        codes=codes or {},
        work=extra.pop("work", None),
    )


def work(statements: float, redis_commands: float | None = 0.0, pings: float = 1.0) -> Work:
    return Work(statements=statements, pings=pings, redis_commands=redis_commands)


def facts(rows: int, *, claimed: int | None = None, redis: int | None = None) -> ClaimFacts:
    return ClaimFacts(
        rows=rows,
        distinct_users=rows,
        claimed_count=rows if claimed is None else claimed,
        total=1000,
        redis_counter=rows if redis is None else redis,
    )


def claim_row(load: Load, *, exact: bool = True) -> ClaimRow:
    verdict = Exactness(
        expected_rows=1000,
        expected_201=1000,
        facts=facts(1000),
        mismatches=() if exact else ("rows 999 != 1000",),
    )
    return ClaimRow(template_id=1, total=1000, redis_up=True, load=load, exactness=verdict)


def scale_row(existing: int, sequential_p50: float, concurrent_p50: float) -> ScaleRow:
    return ScaleRow(
        existing_claims=existing,
        template_id=2,
        sequential=answers({"201": 100}, p50=sequential_p50),
        concurrent=answers({"201": 100}, p50=concurrent_p50),
        exactness=Exactness(expected_rows=1, expected_201=1, facts=facts(1), mismatches=()),
    )


def read_row(name: str, p50: float, queries: int, small: int) -> ReadRow:
    return ReadRow(
        name=name,
        path="/",
        load=answers({"200": 300}, p50=p50),
        queries=queries,
        queries_small_data=small,
    )


def full_results() -> Results:
    return Results(
        baseline=answers({"200": 1000}, rps=1000.0, p99=100.0, work=work(1.0)),
        shopper_list=answers({"200": 1000}, rps=699.0, work=work(2.0)),
        selling=claim_row(answers({"201": 5000}, rps=499.0, work=work(4.06))),
        selling_galera=claim_row(answers({"201": 5000}, rps=60.0, work=work(4.2))),
        storm=claim_row(answers({"201": 1000, "409": 4000}, rps=300.0, p99=200.0)),
        sold_out=claim_row(answers({"409": 5000}, rps=850.0, work=work(1.0)), exact=False),
        storm_redis_stopped=claim_row(answers({"201": 1000, "409": 4000}, rps=239.0)),
        scale=(scale_row(0, 4.0, 40.0), scale_row(1_000_000, 5.0, 50.1)),
        reads=Reads(
            templates=1000,
            coupons_held=10000,
            page_size=20,
            last_page=500,
            rows=(
                read_row("list", 49.9, 3, 3),
                read_row("mine_first", 50.0, 3, 3),
                read_row("mine_last", 10.0, 4, 3),
            ),
        ),
    )
