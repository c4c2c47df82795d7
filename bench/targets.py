"""Every target the bench judges, each defined once and named by what it measures, all against
rows of the same run (DRF's empty view with no middleware, the baseline, the database alone).
Where a later version of the spec set a new bound on a figure (SPEC sections 11, 15 and 21,
the claim's wing of version 5, then section 36), the later bound is the one here;
docs/measurements keeps what each run measured against the bounds of its day."""

from collections.abc import Callable

from bench.results import ClaimRow, Load, Results, Target
from bench.tables import MISS, NOT_RUN, PASS, fmt, ratio

# Throughput on the server the bench runs first (the shipped one), against DRF's empty view
# with no middleware (no authentication, no database) under gunicorn 2 x 2 gthread, the run's
# own or its comparison's (SPEC section 36).
EMPTY_VIEW_SERVER = "gthread"
AUTH_ME_MIN_OF_EMPTY = 0.80  # GET /api/auth/me, the user's facts warm
LIST_MIN_OF_EMPTY = 0.50  # GET /api/coupons, a page of 20
SOLD_OUT_MIN_OF_EMPTY = 1.00  # a warm refusal
# A warm refusal against the empty view under the same server (the one the bench runs first).
SOLD_OUT_MIN_OF_EMPTY_SAME_SERVER = 0.60
# Each user claims once, cold, against the database alone doing the claim's one CALL on one
# template at the app's connections (scripts/measure_hot_row.py in the same run).
SELLING_MIN_OF_DATABASE_ALONE = 0.35
MIXED_STORM_MIN_OF_BASELINE = 0.30
REDIS_STOPPED_MIN_OF_STORM = 0.80  # the mixed storm with Redis stopped, of the one with it up
# The mixed storm's p99 against the baseline's: the same 64 connections queue on both.
MIXED_STORM_MAX_P99_OF_BASELINE = 1.5
# The app's CPU per answer (its processes' cores over the row, per answer).
REFUSAL_MAX_APP_CPU_MS = 0.5
WIN_MAX_APP_CPU_MS = 1.0
# Work per request, read from the bench's own servers.
LIST_MAX_STATEMENTS = 1
WIN_MAX_DATABASE_ROUND_TRIPS = 1  # statements and health-check pings: the CALL alone
REFUSAL_MAX_STATEMENTS = 0
# Statements per request are averages over thousands of requests: a connection opened again
# (after a worker restart) adds a few statements to a whole row, not 0.05 to each request.
STATEMENT_SLACK = 0.05
# A claim's latency as the template fills, and the shopper's reads.
SCALE_MAX_P50_GROWTH = 1.25  # p50 at 1,000,000 existing claims over p50 at none
READ_MAX_P50_MS = 50.0
# Long staff work (SPEC section 34): a file of 100,000 codes previewed and imported, and a
# grant to the 100,000 users of a file, each job done within this.
STAFF_JOB_MAX_SECONDS = 120.0

SELLING_CALL_STORM = "one call (now)"  # the database-alone storm on one template


def judge(results: Results) -> list[Target]:
    """One row per target: what it asks, what was measured, PASS / MISS / n/a (not run)."""
    targets: list[Target] = []

    def add(name: str, wanted: str, measured: str, ok: bool | None) -> None:
        verdict = NOT_RUN if ok is None else (PASS if ok else MISS)
        targets.append(Target(target=name, wanted=wanted, measured=measured, verdict=verdict))

    def at_least(name: str, value: float | None, minimum: float, of: str) -> None:
        ok = None if value is None else value >= minimum
        add(name, f">= {minimum:.2f} x {of}", f"{fmt(value, 2)} x", ok)

    def at_most(
        name: str, value: float | None, maximum: float, unit: str, slack: float = 0.0
    ) -> None:
        ok = None if value is None else value <= maximum + slack
        add(name, f"<= {fmt(float(maximum), 2)}{unit}", f"{fmt(value, 2)}{unit}", ok)

    def exact(name: str, row: ClaimRow | None) -> None:
        ok = None if row is None else row.exactness.exact and row.load.server_errors == 0
        measured = "-" if row is None else "; ".join(row.exactness.mismatches) or "exact"
        if row is not None and row.load.server_errors:
            measured += f"; {row.load.server_errors} 5xx"
        add(name, "exact, 0 5xx", measured, ok)

    def load_of(row: ClaimRow | None) -> Load | None:
        return None if row is None else row.load

    def per_request(load: Load | None, figure: Callable[[Load], float | None]) -> float | None:
        return None if load is None else figure(load)

    def statements(load: Load) -> float | None:
        return None if load.work is None else load.work.statements

    def round_trips(load: Load) -> float | None:
        return None if load.work is None else load.work.statements + load.work.pings

    def app_cpu_ms(load: Load) -> float | None:
        return load.cpu_ms_per_answer("app")

    def rps(load: Load | None) -> float | None:
        return None if load is None else load.rps

    other = results.comparison
    if results.server == EMPTY_VIEW_SERVER:
        empty = rps(results.empty_view)
    else:
        empty = rps(other.empty_view) if other and other.server == EMPTY_VIEW_SERVER else None
    base = results.baseline
    selling, sold_out = load_of(results.selling), load_of(results.sold_out)
    storm, stopped = load_of(results.storm), load_of(results.storm_redis_stopped)
    call_storm = None if results.hot_row is None else results.hot_row.storm(SELLING_CALL_STORM)

    of_empty = "the empty view under gunicorn"
    at_least("auth/me throughput", ratio(base.rps, empty), AUTH_ME_MIN_OF_EMPTY, of_empty)
    at_least(
        "shopper list throughput",
        ratio(rps(results.shopper_list), empty),
        LIST_MIN_OF_EMPTY,
        of_empty,
    )
    at_least(
        "sold-out refusal throughput", ratio(rps(sold_out), empty), SOLD_OUT_MIN_OF_EMPTY, of_empty
    )
    at_least(
        "sold-out refusal throughput, same server",
        ratio(rps(sold_out), rps(results.empty_view)),
        SOLD_OUT_MIN_OF_EMPTY_SAME_SERVER,
        "its empty view",
    )
    at_least(
        "selling phase claims/s",
        ratio(rps(selling), None if call_storm is None else call_storm.per_second),
        SELLING_MIN_OF_DATABASE_ALONE,
        "the database alone (one CALL, one template)",
    )
    at_least(
        "mixed claim storm throughput",
        ratio(rps(storm), base.rps),
        MIXED_STORM_MIN_OF_BASELINE,
        "baseline",
    )
    at_least(
        "Redis stopped storm throughput",
        ratio(rps(stopped), rps(storm)),
        REDIS_STOPPED_MIN_OF_STORM,
        "the Redis-up storm",
    )
    storm_p99 = None if storm is None else storm.p99_ms
    p99_ratio = ratio(storm_p99, base.p99_ms)
    add(
        "mixed claim storm p99",
        f"<= {MIXED_STORM_MAX_P99_OF_BASELINE:.1f} x baseline p99 ({fmt(base.p99_ms)} ms)",
        f"{fmt(storm_p99)} ms = {fmt(p99_ratio, 2)} x",
        None if p99_ratio is None else p99_ratio <= MIXED_STORM_MAX_P99_OF_BASELINE,
    )
    at_most(
        "app CPU per sold-out refusal",
        per_request(sold_out, app_cpu_ms),
        REFUSAL_MAX_APP_CPU_MS,
        " ms",
    )
    at_most(
        "app CPU per win (selling phase)",
        per_request(selling, app_cpu_ms),
        WIN_MAX_APP_CPU_MS,
        " ms",
    )
    at_most(
        "statements per shopper list request",
        per_request(results.shopper_list, statements),
        LIST_MAX_STATEMENTS,
        "",
        STATEMENT_SLACK,
    )
    at_most(
        "database round trips per win (statements and pings)",
        per_request(selling, round_trips),
        WIN_MAX_DATABASE_ROUND_TRIPS,
        "",
        STATEMENT_SLACK,
    )
    at_most(
        "statements per sold-out refusal",
        per_request(sold_out, statements),
        REFUSAL_MAX_STATEMENTS,
        "",
        STATEMENT_SLACK,
    )
    exact("selling phase exact", results.selling)
    exact("selling phase through HAProxy + Galera exact", results.selling_galera)
    exact("mixed claim storm exact (rows, claimed_count, Redis)", results.storm)
    exact("sold-out exact (all 409 sold_out, nothing changed)", results.sold_out)
    exact("Redis stopped storm exact", results.storm_redis_stopped)

    if results.scale:
        first, last = results.scale[0], results.scale[-1]
        for mode, label in (("sequential", "sequential"), ("concurrent", "16 connections")):
            value = ratio(getattr(last, mode).p50_ms, getattr(first, mode).p50_ms)
            add(
                f"claim p50 at {last.existing_claims:,} vs 0 claims ({label})",
                f"<= {SCALE_MAX_P50_GROWTH} x",
                f"{fmt(value, 2)} x",
                None if value is None else value <= SCALE_MAX_P50_GROWTH,
            )
        all_exact = all(row.exactness.exact for row in results.scale)
        add("scale claims all 201 and exact", "yes", fmt(all_exact), all_exact)
    else:
        add("claim p50 at 1,000,000 vs 0 claims", f"<= {SCALE_MAX_P50_GROWTH} x", "-", None)

    reads = results.reads
    for name, label in (
        ("list", "GET /api/coupons first page"),
        ("mine_first", "GET /api/coupons/mine first page"),
        ("mine_last", "GET /api/coupons/mine last page"),
    ):
        read = reads.row(name) if reads else None
        add(
            f"{label} p50",
            f"< {READ_MAX_P50_MS:.0f} ms",
            f"{fmt(read and read.load.p50_ms)} ms",
            None if read is None else read.load.p50_ms < READ_MAX_P50_MS,
        )
    jobs = results.staff_jobs
    for name in ("codes preview", "codes import", "grant from a file"):
        job = jobs.row(name) if jobs else None
        if job is None:
            add(f"staff job: {name}", f"< {STAFF_JOB_MAX_SECONDS:.0f} s, all done", "-", None)
            continue
        done = job.state == "succeeded" and (name == "codes preview" or job.made == job.rows)
        add(
            f"staff job: {name} of {job.rows:,} rows",
            f"< {STAFF_JOB_MAX_SECONDS:.0f} s, all done",
            f"{fmt(job.seconds)} s" + ("" if done else f", {job.state}, {job.made:,} made"),
            done and job.seconds < STAFF_JOB_MAX_SECONDS,
        )
    for family, names in (("list", ["list"]), ("mine", ["mine_first", "mine_last"])):
        present = [row for row in (reads.rows if reads else ()) if row.name in names]
        counts = sorted({row.queries for row in present} | {r.queries_small_data for r in present})
        add(
            f"{family} queries per request independent of data size",
            "constant",
            " / ".join(str(count) for count in counts) or "-",
            None if not present else len(counts) == 1,
        )
    return targets
