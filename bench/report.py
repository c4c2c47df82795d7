"""The printed tables of one run, its rows and its targets' verdicts (bench.targets)."""

from bench import limits_table
from bench.results import ClaimRow, Load, Results, RunDocument, ServerComparison
from bench.tables import fmt, ratio, table


def cpu_split(load: Load) -> str:
    cpu = load.cpu
    if cpu is None:
        return "-"
    return "/".join(f"{v:.2f}" for v in (cpu.app, cpu.mariadb, cpu.load_generator, cpu.other))


def throughput_row(label: str, load: Load, base: float, row: ClaimRow | None) -> list[str]:
    return [
        label,
        str(load.requests),
        str(load.concurrency),
        fmt(load.rps, 0),
        fmt(ratio(load.rps, base), 2),
        fmt(load.p50_ms),
        fmt(load.p99_ms),
        str(sum(n for status, n in load.statuses.items() if status.startswith("2"))),
        str(load.count(409)),
        str(load.server_errors + load.missing),
        "-" if row is None else fmt(row.exactness.exact),
        "-" if row is None else fmt(row.exactness.facts.redis_counter),
        "-" if load.work is None else fmt(load.work.statements, 2),
        "-" if load.work is None else fmt(load.work.redis_commands, 2),
        cpu_split(load),
        fmt(load.cpu_ms_per_answer("app"), 2),
        fmt(load.cpu_ms_per_answer("mariadb"), 2),
    ]


def throughput_loads(results: Results) -> list[tuple[str, Load]]:
    """The throughput rows, labelled, in the table's order."""
    loads = [("baseline", results.baseline)]
    if results.shopper_list is not None:
        loads.append(("list", results.shopper_list))
    for label, row in (
        ("selling phase", results.selling),
        ("selling phase, Galera", results.selling_galera),
        ("mixed storm, Redis up", results.storm),
        ("sold-out", results.sold_out),
        ("mixed storm, Redis stopped", results.storm_redis_stopped),
    ):
        if row is not None:
            loads.append((label, row.load))
    return loads


def render(document: RunDocument) -> str:
    results, targets, machine = document.results, document.targets, document.machine
    base = results.baseline.rps
    out = [
        "",
        f"Coupons benchmark ({document.mode}) started {document.started_at},"
        f" took {document.seconds} s",
        f"Machine: {machine.cores} x {machine.cpu}, {machine.platform}",
        f"MariaDB {machine.mariadb}, {machine.redis}, Python {machine.python}, {machine.wrk}",
        f"Server: {document.server.description}, {document.server.settings}",
        "",
    ]
    rows = [throughput_row("baseline GET /api/auth/me", results.baseline, base, None)]
    if results.shopper_list is not None:
        rows.append(throughput_row("list GET /api/coupons (page of 20)", results.shopper_list,
                                   base, None))  # fmt: skip
    for label, row in (
        ("selling phase (all new users, room left)", results.selling),
        ("the same through HAProxy + 3 Galera nodes", results.selling_galera),
        ("mixed claim storm, Redis up", results.storm),
        ("claims on the sold-out template", results.sold_out),
        ("mixed claim storm, Redis stopped", results.storm_redis_stopped),
    ):
        if row is not None:
            rows.append(throughput_row(label, row.load, base, row))
    headers = ["throughput (wrk)", "req", "conc", "req/s", "x base", "p50 ms", "p99 ms"]
    headers += ["2xx", "409", "5xx/lost", "exact", "redis", "SQL/req", "Redis/req"]
    headers += ["cores app/db/load/other"]
    headers += ["app CPU ms/req", "db CPU ms/req"]
    out.append(table(headers, rows))
    work_rows = [
        [
            label,
            fmt(load.work.statements, 2),
            fmt(load.work.pings, 2),
            " ".join(f"{k}={v:g}" for k, v in load.work.statements_by_kind.items()) or "-",
            fmt(load.work.redis_commands, 2),
            " ".join(f"{k}={v:g}" for k, v in load.work.redis_by_command.items()) or "-",
        ]
        for label, load in throughput_loads(results)
        if load.work is not None
    ]
    if work_rows:
        headers = ["work per request (read from the servers)", "SQL", "pings", "SQL by kind"]
        headers += ["Redis", "Redis by command"]
        out += ["", table(headers, work_rows)]
    if results.storm and results.storm.load.rps_to_last_2xx:
        out.append(
            f"(the mixed storm's selling part: {results.storm.load.rps_to_last_2xx:.0f} claims/s"
            f" until its last 201 at {results.storm.load.seconds_to_last_2xx} s)"
        )

    if results.scale:
        zero = results.scale[0]
        scale_rows = [
            [
                f"{row.existing_claims:,} existing claims",
                fmt(row.sequential.p50_ms),
                fmt(row.sequential.p99_ms),
                fmt(ratio(row.sequential.p50_ms, zero.sequential.p50_ms), 2),
                fmt(row.concurrent.p50_ms),
                fmt(row.concurrent.p99_ms),
                fmt(ratio(row.concurrent.p50_ms, zero.concurrent.p50_ms), 2),
                fmt(row.concurrent.rps, 0),
                fmt(row.exactness.exact),
            ]
            for row in results.scale
        ]
        headers = ["scale: claim latency (aiohttp)", "seq p50", "seq p99", "x at 0"]
        headers += ["c16 p50", "c16 p99", "x at 0", "c16 req/s", "exact"]
        out += ["", table(headers, scale_rows)]

    if results.reads:
        reads = results.reads
        labels = {
            "list": f"GET /api/coupons ({reads.templates:,} templates) p1",
            "mine_first": f"GET /api/coupons/mine ({reads.coupons_held:,} held) p1",
            "mine_last": f"GET /api/coupons/mine p{reads.last_page} (last)",
        }
        read_rows = [
            [
                labels[row.name],
                fmt(row.load.p50_ms),
                fmt(row.load.p99_ms),
                fmt(row.load.rps, 0),
                str(row.queries),
                str(row.queries_small_data),
            ]
            for row in reads.rows
        ]
        headers = [f"reads (sequential, page_size {reads.page_size})", "p50 ms", "p99 ms"]
        headers += ["req/s", "queries", "queries, small data"]
        out += ["", table(headers, read_rows)]

    if results.staff_jobs:
        jobs = results.staff_jobs
        job_rows = [
            [row.name, f"{row.rows:,}", fmt(row.seconds, 2), row.state, f"{row.made:,}"]
            for row in jobs.rows
        ]
        headers = [
            f"staff jobs (codes XLSX {jobs.codes_file_bytes:,} B, users CSV"
            f" {jobs.users_file_bytes:,} B)",
            "rows",
            "seconds",
            "state",
            "made",
        ]
        out += ["", table(headers, job_rows)]

    compared = results.comparison
    if compared:
        out += ["", server_comparison(document.server.server, results, compared)]

    out += ["", limits_table.render(results)]
    out += [
        "",
        table(
            ["target", "wanted", "measured", "verdict"],
            [[t.target, t.wanted, t.measured, t.verdict] for t in targets],
        ),
        "",
    ]
    return "\n".join(out)


def server_comparison(primary: str, results: Results, compared: ServerComparison) -> str:
    """Each row under both servers: req/s, p99, app CPU per request, and each row against its
    own server's empty view (the ratio the targets judge)."""
    other = compared.server

    def load_of(row: Load | ClaimRow | None) -> Load | None:
        return row.load if isinstance(row, ClaimRow) else row

    pairs: list[tuple[str, Load | ClaimRow | None, Load | ClaimRow | None]] = [
        ("empty view", results.empty_view, compared.empty_view),
        ("bare DRF", results.bare_drf, compared.bare_drf),
        ("baseline (auth/me)", results.baseline, compared.baseline),
        ("list", results.shopper_list, compared.shopper_list),
        ("selling phase", results.selling, compared.selling),
        ("mixed storm", results.storm, compared.storm),
        ("sold-out", results.sold_out, compared.sold_out),
    ]
    mine_empty, theirs_empty = results.empty_view, compared.empty_view
    rows = []
    for name, mine_row, theirs_row in pairs:
        mine, theirs = load_of(mine_row), load_of(theirs_row)
        if mine is None or theirs is None:
            continue
        rows.append(
            [
                name,
                fmt(mine.rps, 0),
                fmt(theirs.rps, 0),
                fmt(ratio(theirs.rps, mine.rps), 2),
                fmt(mine.p99_ms),
                fmt(theirs.p99_ms),
                fmt(mine.cpu_ms_per_answer("app"), 2),
                fmt(theirs.cpu_ms_per_answer("app"), 2),
                fmt(ratio(mine.rps, mine_empty.rps) if mine_empty else None, 2),
                fmt(ratio(theirs.rps, theirs_empty.rps) if theirs_empty else None, 2),
            ]
        )
    headers = ["same rows, other server", f"{primary} req/s", f"{other} req/s"]
    headers += [f"{other}/{primary}", f"{primary} p99", f"{other} p99"]
    headers += [f"{primary} CPU ms", f"{other} CPU ms", f"{primary} x empty", f"{other} x empty"]
    return table(headers, rows)
