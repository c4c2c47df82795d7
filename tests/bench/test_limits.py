"""The table against the limits (bench/scenarios/limits.py, bench/limits_table.py): every row
against the empty view, bare DRF and the baseline of the same run, the row-lock wait per 201
from the server's counters, and the database-alone row printed from measure_hot_row.py's
JSON."""

from dataclasses import replace

from bench import limits_table
from bench.results import CpuShare, HotRow, HotRowStorm, Results
from tests.support.bench_results import answers, claim_row, full_results, work


def cpu(app: float) -> CpuShare:
    return CpuShare(app=app, mariadb=0.2, redis=0.05, load_generator=0.05, machine=2.0, other=0.0)


def limits_results() -> Results:
    results = full_results()
    selling = claim_row(answers({"201": 1000}, rps=600.0, work=work(3.0)))
    selling = replace(
        selling,
        load=replace(selling.load, cpu=cpu(1.6)),
        mariadb_counters={"Innodb_row_lock_time": 50, "Innodb_row_lock_waits": 20},
    )
    return replace(
        results,
        empty_view=answers({"200": 1000}, rps=4444.0, work=work(0.0)),
        bare_drf=answers({"200": 1000}, rps=2222.0, work=work(0.0)),
        selling=selling,
        sold_out=claim_row(answers({"409": 5000}, rps=1000.0, work=work(0.0))),
        shopper_list=answers({"200": 1000}, rps=850.0, work=work(1.0)),
        storm=claim_row(answers({"201": 1000, "409": 4000}, rps=300.0, p99=150.0)),
        hot_row=HotRow(
            connections=4,
            decision_p50_ms=1.2,
            storms=(
                HotRowStorm("statements, 4 conns, one template", 2000, 5.0, 400.0, 2.5, 900),
                HotRowStorm("one call (now), 4 conns, one template", 5000, 5.0, 1000.0, 0.1, 80),
            ),
            cpu=cpu(0.0),
        ),
    )


def test_the_row_lock_wait_is_per_coupon_issued():
    results = limits_results()
    assert results.selling is not None

    assert limits_table.row_lock_ms_per_201(results.selling) == 0.05  # 50 ms over 1000 201s
    assert limits_table.row_lock_ms_per_201(claim_row(answers({"409": 10}))) is None


def test_the_table_sets_every_row_against_the_empty_view_and_prints_the_database_alone():
    text = limits_table.render(limits_results())

    empty_line = next(line for line in text.splitlines() if line.startswith("empty view"))
    bare_line = next(line for line in text.splitlines() if line.startswith("bare DRF"))
    selling_line = next(line for line in text.splitlines() if line.startswith("selling phase"))
    assert empty_line.split()[4:8] == ["4444", "1.00", "2.00", "4.44"]  # x empty, bare, base
    assert bare_line.split()[5:9] == ["2222", "0.50", "1.00", "2.22"]
    assert "0.050" in selling_line.split()  # the row-lock wait per 201
    assert "1.60" in selling_line.split()  # the app's cores
    assert "one call (now), 4 conns, one template" in text
    assert "p50 1.2 ms" in text
