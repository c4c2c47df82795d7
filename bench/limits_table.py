"""The table that sets every row against the limits measured in the same run: DRF's empty view
with no middleware and through the whole stack (no authentication, no database), the baseline
and the database alone on the hot row; with the row-lock wait per 201 and the CPU each row
used."""

from bench.results import ClaimRow, Load, Results
from bench.tables import fmt, ratio, table


def row_lock_ms_per_201(row: ClaimRow) -> float | None:
    """The server's Innodb_row_lock_time during the row, per coupon issued."""
    issued = row.load.count(201)
    waited = row.mariadb_counters.get("Innodb_row_lock_time")
    return None if waited is None or not issued else waited / issued


def render(results: Results) -> str:
    """Every throughput row against the empty view, bare DRF and the baseline, with its CPU
    and lock wait; then the database alone on the hot row."""
    empty, bare = results.empty_view, results.bare_drf
    base = results.baseline

    def line(label: str, load: Load, row: ClaimRow | None) -> list[str]:
        cpu = load.cpu
        return [
            label,
            fmt(load.rps, 0),
            fmt(ratio(load.rps, None if empty is None else empty.rps), 2),
            fmt(ratio(load.rps, None if bare is None else bare.rps), 2),
            fmt(ratio(load.rps, base.rps), 2),
            "-" if cpu is None else fmt(cpu.app, 2),
            "-" if cpu is None else fmt(cpu.machine, 2),
            fmt(load.cpu_ms_per_answer("app"), 2),
            "-" if load.work is None else fmt(load.work.statements, 2),
            "-" if row is None else fmt(row_lock_ms_per_201(row), 3),
        ]

    rows = [] if empty is None else [line("empty view, no middleware", empty, None)]
    if bare is not None:
        rows.append(line("bare DRF, whole middleware stack", bare, None))
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
    headers = ["against the limits", "req/s", "x empty", "x bare", "x base", "app cores"]
    headers += ["machine"]
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
