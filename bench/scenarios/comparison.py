"""The other gunicorn worker class in the same run: restart gunicorn with it and measure the
baseline and the mixed storm again."""

from bench.harness import Harness
from bench.progress import log
from bench.results import WorkerComparison
from bench.scenarios import baseline, storm


def run(harness: Harness, *, worker_class: str) -> WorkerComparison:
    log(f"[compare] restarting gunicorn with {worker_class} workers")
    harness.start_app(worker_class)
    return WorkerComparison(
        worker_class=worker_class,
        baseline=baseline.run(harness),
        storm=storm.run(harness, f"storm_{worker_class}", redis_up=True),
    )
