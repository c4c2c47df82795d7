"""The one place that decides whether a claim load was exact: the answers the clients got and
the rows, `claimed_count` and Redis counter the servers hold must tell the same story."""

from bench.results import ClaimFacts, Exactness, Load


def check(
    *, load: Load, facts: ClaimFacts, rows_before: int, expected_201: int, redis_checked: bool
) -> Exactness:
    """Exact when every request was answered; exactly `expected_201` answers were 201 and every
    other one 409 `sold_out`; the template holds `rows_before + expected_201` rows, one per
    distinct user, and `claimed_count` says the same; and, when `redis_checked`, so does the
    Redis counter."""
    expected_rows = rows_before + expected_201
    mismatches: list[str] = []

    def expect(what: str, actual: object, wanted: object) -> None:
        if actual != wanted:
            mismatches.append(f"{what} {actual} != {wanted}")

    expect("unanswered requests", load.missing, 0)
    expect("201 answers", load.count(201), expected_201)
    refusals = load.answered - load.count(201)
    expect("409 sold_out answers", load.count(409), refusals)
    expect("409 codes", dict(load.codes), {"sold_out": refusals} if refusals else {})
    expect("rows", facts.rows, expected_rows)
    expect("distinct users", facts.distinct_users, expected_rows)
    expect("claimed_count", facts.claimed_count, expected_rows)
    if redis_checked:
        expect("Redis counter", facts.redis_counter, expected_rows)
    return Exactness(
        expected_rows=expected_rows,
        expected_201=expected_201,
        facts=facts,
        mismatches=tuple(mismatches),
    )
