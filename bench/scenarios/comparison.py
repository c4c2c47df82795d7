"""The other app server in the same run (gunicorn beside granian, bench.processes): restart the app
under it and measure bare DRF, the baseline, the list, the selling phase and, when the run
has them, the storm and the sold-out claims again."""

from bench.harness import Harness
from bench.progress import log
from bench.results import ServerComparison
from bench.scenarios import baseline, limits, selling, shopper_list, sold_out, storm


def run(harness: Harness, *, server: str, storm_too: bool) -> ServerComparison:
    log(f"[compare] restarting the app under {server}")
    harness.start_app(server)
    empty = limits.empty_view(harness)
    bare = limits.bare_drf(harness)
    base = baseline.run(harness)
    listed = shopper_list.run(harness)
    sold = selling.run(harness)
    storm_row = storm.run(harness, f"storm_{server}", redis_up=True) if storm_too else None
    sold_out_row = (
        sold_out.run(harness, template_id=storm_row.template_id, total=storm_row.total)
        if storm_row is not None
        else None
    )
    return ServerComparison(
        server=server,
        bare_drf=bare,
        empty_view=empty,
        baseline=base,
        shopper_list=listed,
        selling=sold,
        storm=storm_row,
        sold_out=sold_out_row,
    )
