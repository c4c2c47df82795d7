"""The printed table and the target verdicts (issue 5), from the results of one run."""

from typing import Any

PASS, MISS, NOT_RUN = "PASS", "MISS", "n/a"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def verdict(ok: bool | None) -> str:
    return NOT_RUN if ok is None else (PASS if ok else MISS)


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, str]]:
    """One row per target of issue 5: what it asks, what was measured, PASS / MISS / n/a."""
    targets: list[dict[str, str]] = []

    def add(name: str, wanted: str, measured: str, ok: bool | None) -> None:
        targets.append(
            {"target": name, "wanted": wanted, "measured": measured, "verdict": verdict(ok)}
        )

    base = results.get("baseline", {}).get("rps")
    storm = results.get("storm")
    sold_out = results.get("sold_out")
    stopped = results.get("storm_redis_stopped")

    storm_ratio = ratio(storm and storm["rps"], base)
    add(
        "claim storm throughput",
        ">= 0.30 x baseline",
        f"{fmt(storm_ratio, 2)} x",
        None if storm_ratio is None else storm_ratio >= 0.30,
    )
    add(
        "claim storm p99",
        "<= 250 ms",
        f"{fmt(storm and storm['p99_ms'])} ms",
        None if not storm else storm["p99_ms"] <= 250,
    )
    add(
        "claim storm 5xx",
        "0",
        fmt(storm and storm["5xx"] + storm["transport_errors"]),
        None if not storm else storm["5xx"] + storm["transport_errors"] == 0,
    )
    add(
        "claim storm exact (rows, claimed_count, Redis)",
        "= total",
        fmt(storm and storm["checks"]["exact"]),
        None if not storm else storm["checks"]["exact"],
    )
    sold_ratio = ratio(sold_out and sold_out["rps"], base)
    add(
        "sold-out rejection throughput",
        ">= 0.50 x baseline",
        f"{fmt(sold_ratio, 2)} x",
        None if sold_ratio is None else sold_ratio >= 0.50,
    )
    stopped_ratio = ratio(stopped and stopped["rps"], storm and storm["rps"])
    add(
        "Redis stopped storm throughput",
        ">= 0.80 x Redis-up storm",
        f"{fmt(stopped_ratio, 2)} x",
        None if stopped_ratio is None else stopped_ratio >= 0.80,
    )
    add(
        "Redis stopped storm exact, no 5xx",
        "= total, 0",
        fmt(stopped and stopped["checks"]["exact"] and stopped["5xx"] == 0),
        None if not stopped else stopped["checks"]["exact"] and stopped["5xx"] == 0,
    )

    scale = results.get("scale") or []
    if scale:
        first, last = scale[0], scale[-1]
        for mode, label in (("sequential", "sequential"), ("concurrent", "16 connections")):
            scale_ratio = ratio(last[mode]["p50_ms"], first[mode]["p50_ms"])
            add(
                f"claim p50 at {last['existing_claims']:,} vs 0 claims ({label})",
                "<= 1.25 x",
                f"{fmt(scale_ratio, 2)} x",
                None if scale_ratio is None else scale_ratio <= 1.25,
            )
        add(
            "scale claims all 201 and exact",
            "yes",
            fmt(all(row["checks"]["all_201"] and row["checks"]["exact"] for row in scale)),
            all(row["checks"]["all_201"] and row["checks"]["exact"] for row in scale),
        )
    else:
        add("claim p50 at 1,000,000 vs 0 claims", "<= 1.25 x", "-", None)

    reads = results.get("reads", {})
    for name, label in (
        ("list", "GET /api/coupons first page"),
        ("mine_first", "GET /api/coupons/mine first page"),
        ("mine_last", "GET /api/coupons/mine last page"),
    ):
        read = reads.get(name)
        add(
            f"{label} p50",
            "< 50 ms",
            f"{fmt(read and read['p50_ms'])} ms",
            None if not read else read["p50_ms"] < 50,
        )
    for family, names in (("list", ["list"]), ("mine", ["mine_first", "mine_last"])):
        present = [reads[name] for name in names if name in reads]
        counts = sorted(
            {read["queries"] for read in present} | {read["queries_small_data"] for read in present}
        )
        add(
            f"{family} queries per request independent of data size",
            "constant",
            " / ".join(str(count) for count in counts) or "-",
            None if not present else len(counts) == 1,
        )
    return targets


def cpu_split(cores: dict[str, float] | None) -> str:
    if not cores:
        return "-"
    parts = ("app", "mariadb", "load_generator", "other")
    return "/".join(f"{cores.get(part, 0.0):.2f}" for part in parts)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in [headers, ["-" * width for width in widths], *rows]
    ]
    return "\n".join(lines)


def render(document: dict[str, Any]) -> str:
    results = document["results"]
    machine = document["machine"]
    base = results.get("baseline", {}).get("rps")
    out = [
        "",
        f"Coupons benchmark ({document['mode']}) started {document['started_at']},"
        f" took {document['seconds']} s",
        f"Machine: {machine['cores']} x {machine['cpu']}, {machine['platform']}",
        f"MariaDB {machine['mariadb']}, {machine['redis']}, Python {machine['python']}",
        f"Server: gunicorn {document['server']['gunicorn']}, {document['server']['settings']}",
        "",
    ]

    throughput_rows = []
    for key, label in (
        ("baseline", "baseline GET /api/auth/me"),
        ("storm", "claim storm, Redis up"),
        ("sold_out", "claims on the sold-out template"),
        ("storm_redis_stopped", "claim storm, Redis stopped"),
    ):
        summary = results.get(key)
        if not summary:
            continue
        statuses = summary["statuses"]
        checks = summary.get("checks", {})
        exact = checks.get("exact", checks.get("unchanged"))
        throughput_rows.append(
            [
                label,
                str(summary["requests"]),
                str(summary["concurrency"]),
                fmt(summary["rps"], 0),
                fmt(ratio(summary["rps"], base), 2),
                fmt(summary["p50_ms"]),
                fmt(summary["p99_ms"]),
                str(statuses.get("200", 0) + statuses.get("201", 0)),
                str(statuses.get("409", 0)),
                str(summary["5xx"] + summary["transport_errors"]),
                fmt(exact) if exact is not None else "-",
                fmt(checks.get("redis_counter")),
                cpu_split(summary.get("cpu_cores")),
            ]
        )
    out.append(
        table(
            [
                "throughput",
                "req",
                "conc",
                "req/s",
                "x base",
                "p50 ms",
                "p99 ms",
                "2xx",
                "409",
                "5xx/err",
                "exact",
                "redis",
                "cores app/db/load/other",
            ],
            throughput_rows,
        )
    )
    if "claim" in results:
        out.append(f"claim scenarios: {results['claim']['skipped']}")

    scale = results.get("scale") or []
    if scale:
        zero = scale[0]
        rows = []
        for row in scale:
            seq, conc = row["sequential"], row["concurrent"]
            rows.append(
                [
                    f"{row['existing_claims']:,} existing claims",
                    fmt(seq["p50_ms"]),
                    fmt(seq["p99_ms"]),
                    fmt(ratio(seq["p50_ms"], zero["sequential"]["p50_ms"]), 2),
                    fmt(conc["p50_ms"]),
                    fmt(conc["p99_ms"]),
                    fmt(ratio(conc["p50_ms"], zero["concurrent"]["p50_ms"]), 2),
                    fmt(conc["rps"], 0),
                    fmt(row["checks"]["all_201"] and row["checks"]["exact"]),
                ]
            )
        out += [
            "",
            table(
                [
                    "scale: claim latency",
                    "seq p50",
                    "seq p99",
                    "x at 0",
                    "c16 p50",
                    "c16 p99",
                    "x at 0",
                    "c16 req/s",
                    "all 201",
                ],
                rows,
            ),
        ]

    reads = results.get("reads", {})
    if "skipped" in reads:
        out += ["", f"reads: {reads['skipped']}"]
    elif reads:
        rows = []
        for name, label in (
            ("list", f"GET /api/coupons ({reads['templates']:,} templates) p1"),
            ("mine_first", f"GET /api/coupons/mine ({reads['coupons_held']:,} held) p1"),
            ("mine_last", f"GET /api/coupons/mine p{reads['last_page']} (last)"),
        ):
            read = reads.get(name)
            if read:
                rows.append(
                    [
                        label,
                        fmt(read["p50_ms"]),
                        fmt(read["p99_ms"]),
                        fmt(read["rps"], 0),
                        str(read["queries"]),
                        str(read["queries_small_data"]),
                    ]
                )
        out += [
            "",
            table(
                [
                    "reads (sequential, page_size 20)",
                    "p50 ms",
                    "p99 ms",
                    "req/s",
                    "queries",
                    "queries, small data",
                ],
                rows,
            ),
        ]

    compare = results.get("worker_comparison")
    if compare:
        rows = []
        primary = document["server"]["primary_worker_class"]
        for key in ("baseline", "storm"):
            if key in compare["primary"] and key in compare:
                mine, other = compare["primary"][key], compare[key]
                rows.append(
                    [
                        key,
                        fmt(mine["rps"], 0),
                        fmt(mine["p99_ms"]),
                        fmt(other["rps"], 0),
                        fmt(other["p99_ms"]),
                        fmt(ratio(other["rps"], mine["rps"]), 2),
                    ]
                )
        other_name = compare["worker_class"]
        out += [
            "",
            table(
                [
                    "worker class",
                    f"{primary} req/s",
                    f"{primary} p99",
                    f"{other_name} req/s",
                    f"{other_name} p99",
                    f"{other_name}/{primary}",
                ],
                rows,
            ),
        ]

    out += [
        "",
        table(
            ["target (issue 5)", "wanted", "measured", "verdict"],
            [[t["target"], t["wanted"], t["measured"], t["verdict"]] for t in document["targets"]],
        ),
        "",
    ]
    return "\n".join(out)
