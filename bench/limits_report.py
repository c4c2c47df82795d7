"""Issue 22's targets (SPEC section 21) and the table that sets every row against the limits
measured in the same run: bare DRF (no authentication, no database), the baseline and the
database alone on the hot row; with the row-lock wait per 201 and the CPU each row used."""

from bench.results import ClaimRow, Load, Results, Target
from bench.tables import MISS, NOT_RUN, PASS, fmt, ratio, table

BASELINE_MIN_OF_BARE_DRF = 0.45
SOLD_OUT_MIN_RATIO = 1.0  # of the baseline, with no database statement at all
LIST_MIN_RATIO = 0.85
SELLING_MIN_RATIO = 0.60
SELLING_MIN_APP_CORES = 1.6  # the winners work, they do not wait
STORM_MAX_P99_RATIO = 1.5
STATEMENT_SLACK = 0.05  # as bench.report's: a reconnect's few statements over a whole row


def row_lock_ms_per_201(row: ClaimRow) -> float | None:
    """The server's Innodb_row_lock_time during the row, per coupon issued."""
    issued = row.load.count(201)
    waited = row.mariadb_counters.get("Innodb_row_lock_time")
    return None if waited is None or not issued else waited / issued


def targets(results: Results) -> list[Target]:
    found: list[Target] = []

    def add(name: str, wanted: str, measured: str, ok: bool | None) -> None:
        verdict = NOT_RUN if ok is None else (PASS if ok else MISS)
        found.append(Target(target=name, wanted=wanted, measured=measured, verdict=verdict))

    base = results.baseline
    bare = results.bare_drf
    value = ratio(base.rps, None if bare is None else bare.rps)
    add(
        "auth/me throughput (issue 22)",
        f">= {BASELINE_MIN_OF_BARE_DRF:.2f} x bare DRF",
        f"{fmt(value, 2)} x",
        None if value is None else value >= BASELINE_MIN_OF_BARE_DRF,
    )
    sold_out = results.sold_out
    value = ratio(None if sold_out is None else sold_out.load.rps, base.rps)
    statements = None if sold_out is None or sold_out.load.work is None else sold_out.load.work
    add(
        "sold-out throughput, no statement (issue 22)",
        f">= {SOLD_OUT_MIN_RATIO:.2f} x baseline, 0 SQL/req",
        f"{fmt(value, 2)} x, {fmt(statements and statements.statements, 2)} SQL/req",
        None
        if value is None or statements is None
        else value >= SOLD_OUT_MIN_RATIO and statements.statements <= STATEMENT_SLACK,
    )
    listed = results.shopper_list
    value = ratio(None if listed is None else listed.rps, base.rps)
    add(
        "shopper list throughput (issue 22)",
        f">= {LIST_MIN_RATIO:.2f} x baseline",
        f"{fmt(value, 2)} x",
        None if value is None else value >= LIST_MIN_RATIO,
    )
    selling = results.selling
    value = ratio(None if selling is None else selling.load.rps, base.rps)
    cores = None if selling is None or selling.load.cpu is None else selling.load.cpu.app
    add(
        "selling phase, app busy (issue 22)",
        f">= {SELLING_MIN_RATIO:.2f} x baseline, app >= {SELLING_MIN_APP_CORES} cores",
        f"{fmt(value, 2)} x, app {fmt(cores, 2)} cores",
        None
        if value is None or cores is None
        else value >= SELLING_MIN_RATIO and cores >= SELLING_MIN_APP_CORES,
    )
    storm = results.storm
    value = ratio(None if storm is None else storm.load.p99_ms, base.p99_ms)
    add(
        "mixed claim storm p99 (issue 22)",
        f"<= {STORM_MAX_P99_RATIO:.1f} x baseline p99 ({fmt(base.p99_ms)} ms)",
        f"{fmt(value, 2)} x",
        None if value is None else value <= STORM_MAX_P99_RATIO,
    )
    return found


def render(results: Results) -> str:
    """Every throughput row against bare DRF and the baseline, with its CPU and lock wait;
    then the database alone on the hot row."""
    bare = results.bare_drf
    base = results.baseline

    def line(label: str, load: Load, row: ClaimRow | None) -> list[str]:
        cpu = load.cpu
        return [
            label,
            fmt(load.rps, 0),
            fmt(ratio(load.rps, None if bare is None else bare.rps), 2),
            fmt(ratio(load.rps, base.rps), 2),
            "-" if cpu is None else fmt(cpu.app, 2),
            "-" if cpu is None else fmt(cpu.machine, 2),
            fmt(load.cpu_ms_per_answer("app"), 2),
            "-" if load.work is None else fmt(load.work.statements, 2),
            "-" if row is None else fmt(row_lock_ms_per_201(row), 3),
        ]

    rows = [] if bare is None else [line("bare DRF GET /bench/bare", bare, None)]
    rows.append(line("baseline GET /api/auth/me", base, None))
    if results.shopper_list is not None:
        rows.append(line("list GET /api/coupons", results.shopper_list, None))
    for label, claim_row in (
        ("selling phase", results.selling),
        ("mixed storm, Redis up", results.storm),
        ("sold-out", results.sold_out),
        ("mixed storm, Redis stopped", results.storm_redis_stopped),
    ):
        if claim_row is not None:
            rows.append(line(label, claim_row.load, claim_row))
    headers = ["against the limits", "req/s", "x bare", "x base", "app cores", "machine"]
    headers += ["app CPU ms/req", "SQL/req", "row lock ms/201"]
    out = [table(headers, rows)]
    hot = results.hot_row
    if hot is not None:
        cpu = hot.cpu
        hot_rows = [
            [
                storm.label,
                fmt(storm.per_second, 0),
                fmt(ratio(storm.per_second, base.rps), 2),
                fmt(storm.row_lock_ms_per_claim, 3),
                str(storm.claims),
            ]
            for storm in hot.storms
        ]
        headers = ["the database alone (measure_hot_row.py)", "claims/s", "x base"]
        headers += ["row lock ms/claim", "claims"]
        out += ["", table(headers, hot_rows)]
        mariadb, script = fmt(cpu and cpu.mariadb, 2), fmt(cpu and cpu.load_generator, 2)
        out.append(
            f"(one decision alone: p50 {hot.decision_p50_ms} ms; during the row mariadb used"
            f" {mariadb} cores, the script {script}, the machine {fmt(cpu and cpu.machine, 2)})"
        )
    return "\n".join(out)
