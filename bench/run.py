"""`make bench`: the claim path and the lists measured side by side in one run.

    python -m bench.run [--quick] [--only SCENARIOS] [--server gthread|sync|granian]
                        [--threads N] [--no-compare] [--profile]

Creates a fresh MariaDB database, starts a private redis-server and the app server against them,
seeds users, tokens and data in-process, runs each scenario (bench/scenarios/) against the
same baseline, prints a table on stdout and writes the same figures to
bench/results/<timestamp>.json. Progress goes to stderr. See bench/README.md."""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench.harness import FULL, QUICK, REPO_ROOT, RESULTS_DIR, Harness
from bench.processes import SERVERS, server_description
from bench.progress import log
from bench.results import ClaimRow, Machine, Results, RunDocument, Server

# The shipped server (config/serve.py, decision 1033), with 2 threads per worker: on the 2-core
# machine more threads per worker made the storm slower (the thread holding the template's row
# lock waits for the GIL; bench/README.md). The comparison runs gunicorn's gthread beside it,
# whose empty view the crowd's rows are judged against (SPEC section 36).
DEFAULT_SERVER = "granian"
DEFAULT_THREADS = 2
SCENARIOS = (
    "limits",
    "list",
    "selling",
    "galera",
    "storm",
    "sold_out",
    "redis_stopped",
    "scale",
    "reads",
    "staff_jobs",
    "compare",
)


def run_scenarios(harness: Harness, args: argparse.Namespace) -> Results:
    """Every scenario wanted, in a fixed order, after the baseline they are all compared to."""
    from bench.scenarios import (
        baseline,
        comparison,
        galera,
        limits,
        reads,
        scale,
        selling,
        shopper_list,
        sold_out,
        staff_jobs,
        storm,
    )

    def wants(scenario: str) -> bool:
        return args.only is None or scenario in args.only

    harness.setup()
    harness.start_app(args.server)
    base = baseline.run(harness)
    empty = limits.empty_view(harness) if wants("limits") else None
    bare = limits.bare_drf(harness) if wants("limits") else None
    list_load = shopper_list.run(harness) if wants("list") else None
    selling_row = selling.run(harness) if wants("selling") else None
    # The same selling phase through HAProxy and 3 Galera nodes (None when they cannot run).
    galera_row = galera.run(harness, server=args.server) if wants("galera") else None
    storm_row: ClaimRow | None = None
    sold_out_row: ClaimRow | None = None
    if wants("storm") or wants("sold_out"):
        storm_row = storm.run(harness, "storm", redis_up=True)
        if wants("sold_out"):
            sold_out_row = sold_out.run(
                harness, template_id=storm_row.template_id, total=storm_row.total
            )
    stopped_row = storm.run_with_redis_stopped(harness) if wants("redis_stopped") else None
    scale_rows = scale.run(harness) if wants("scale") else ()
    reads_result = reads.run(harness) if wants("reads") else None
    staff_jobs_result = staff_jobs.run(harness) if wants("staff_jobs") else None
    # The connections that can decide at once: every request thread.
    deciding = (os.cpu_count() or 1) * (1 if args.server == "sync" else args.threads)
    hot = limits.hot_row(harness, connections=deciding) if wants("limits") else None
    compared = None
    if wants("compare") and not args.no_compare:
        other = "gthread" if args.server == "granian" else "granian"
        compared = comparison.run(harness, server=other, storm_too=wants("storm"))
    return Results(
        baseline=base,
        server=args.server,
        bare_drf=bare,
        empty_view=empty,
        hot_row=hot,
        shopper_list=list_load,
        selling=selling_row,
        selling_galera=galera_row,
        storm=storm_row,
        sold_out=sold_out_row,
        storm_redis_stopped=stopped_row,
        scale=scale_rows,
        reads=reads_result,
        staff_jobs=staff_jobs_result,
        comparison=compared,
    )


def machine_facts(harness: Harness) -> Machine:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(*command: str) -> str:
        return subprocess.run(command, capture_output=True, text=True).stdout.strip()

    return Machine(
        cpu=cpu,
        cores=os.cpu_count(),
        platform=platform.platform(),
        python=platform.python_version(),
        mariadb=harness.mariadb_version,
        redis=version("redis-server", "--version"),
        wrk=version("wrk", "--version").splitlines()[0] if shutil.which("wrk") else "absent",
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small numbers")
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default=DEFAULT_SERVER,
        help="granian (WSGI, shipped) or gunicorn's gthread or sync workers; the comparison"
        " runs under gthread (under granian when another comes first)",
    )
    parser.add_argument(
        "--threads", type=int, default=DEFAULT_THREADS, help="per worker (granian, gthread)"
    )
    parser.add_argument(
        "--no-compare", action="store_true", help="skip re-running under the other app server"
    )
    parser.add_argument(
        "--profile", action="store_true", help="sample the workers with py-spy during claim rows"
    )
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        help=f"comma-separated subset of: {', '.join(SCENARIOS)} (the baseline always runs)",
    )
    args = parser.parse_args(argv)
    if args.only and not args.only <= set(SCENARIOS):
        parser.error(f"--only takes a subset of: {', '.join(SCENARIOS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # SIGTERM (and SIGHUP) unwind like Ctrl-C, so the finally below and atexit stop the servers.
    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)

    from bench import report, targets, wrk

    wrk.executable()  # fail before the slow set-up when wrk is missing
    started_at = datetime.now(UTC)
    workdir = Path(tempfile.mkdtemp(prefix="coupons-bench-"))
    sizes = QUICK if args.quick else FULL
    harness = Harness(sizes=sizes, workdir=workdir, threads=args.threads, profile=args.profile)
    try:
        results = run_scenarios(harness, args)
    except BaseException:
        log(f"FAILED; server logs kept in {workdir}")
        raise
    finally:
        harness.stop_all()
    elapsed = (datetime.now(UTC) - started_at).total_seconds()
    document = RunDocument(
        started_at=started_at.isoformat(timespec="seconds"),
        seconds=round(elapsed, 1),
        command="python -m bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        mode="quick" if args.quick else "full",
        sizes=sizes,
        machine=machine_facts(harness),
        server=Server(
            description=server_description(
                args.server, workers=os.cpu_count() or 1, threads=args.threads
            ),
            server=args.server,
            settings="config.settings.production",
        ),
        results=results,
        targets=tuple(targets.judge(results)),
    )
    print(report.render(document))
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{harness.stamp}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps(asdict(document), indent=2) + "\n")
    log(f"done in {elapsed:.0f} s; figures written to {path.relative_to(REPO_ROOT)}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
