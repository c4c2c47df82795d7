"""The periodic jobs of the service, in one small long-running process: every job the setting
SCHEDULED_JOBS names, every --interval seconds (the expiry of unpaid orders, so an order is
cancelled within a minute of its deadline without cron) or at most every so many seconds (the
cleanups: expired tokens, idempotency records). The jobs are dotted paths, so ops imports no
app. `make run` and docker-compose start it beside gunicorn; SIGTERM or SIGINT stops it after
the job in progress (docs/decisions/0034-run-scheduler-over-celery.md)."""

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError, close_old_connections
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 20.0


def run_every(
    job: Callable[[], object],
    *,
    interval: float,
    stop: threading.Event,
    max_runs: int | None = None,
) -> int:
    """Run `job` now and then every `interval` seconds until `stop` is set (or `max_runs`
    runs). A failing run is logged and retried next time: a database outage must not end the
    scheduler. Returns how many runs were made."""
    runs = 0
    while not stop.is_set():
        run_guarded(job)
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        stop.wait(interval)
    return runs


def run_guarded(job: Callable[[], object]) -> object:
    """Run `job` once; a failure is logged (the next interval retries), never raised. Returns
    what the job returned, None after a failure."""
    try:
        return job()
    except DatabaseError:
        logger.warning("scheduled job failed on the database; retrying next interval")
    except Exception:
        logger.exception("scheduled job failed; retrying next interval")
    finally:
        close_old_connections()  # a long-lived process must not keep a dead connection
    return None


@dataclass
class ScheduledJob:
    """One entry of SCHEDULED_JOBS: the callable, and at most how often it runs (None: every
    run of the scheduler). A job with a period runs at start, then once the period is past."""

    run: Callable[[], str | None]
    every_seconds: float | None = None
    next_due: float = 0.0  # time.monotonic() before which the job is skipped

    def take_turn(self, now: float) -> bool:
        """Whether the job runs now; if so, its next turn is a period away."""
        if self.every_seconds is None:
            return True
        if now < self.next_due:
            return False
        self.next_due = now + self.every_seconds
        return True


def scheduled_jobs() -> dict[str, ScheduledJob]:
    """SCHEDULED_JOBS: name -> "dotted.path" (every run) or ("dotted.path", seconds)."""
    jobs = {}
    for name, entry in settings.SCHEDULED_JOBS.items():
        if isinstance(entry, str):
            jobs[name] = ScheduledJob(run=import_string(entry))
        else:
            path, every_seconds = entry
            jobs[name] = ScheduledJob(run=import_string(path), every_seconds=float(every_seconds))
    return jobs


def run_jobs(
    jobs: dict[str, ScheduledJob],
    *,
    write: Callable[[str], object],
    now: Callable[[], float] = time.monotonic,
) -> None:
    """One run: every job whose turn it is, in turn; one failing job does not keep the others
    from running. The lines the jobs return are written."""
    for job in jobs.values():
        if not job.take_turn(now()):
            continue
        line = run_guarded(job.run)
        if line:
            write(str(line))


class Command(BaseCommand):
    help = "Run the periodic jobs (setting SCHEDULED_JOBS) until SIGTERM/SIGINT."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=DEFAULT_INTERVAL_SECONDS,
            help=f"Seconds between runs (default {DEFAULT_INTERVAL_SECONDS:g}).",
        )

    def handle(self, *args, interval: float, **options) -> None:
        if not 0 < interval <= 60:
            self.stderr.write("--interval must be more than 0 and at most 60 seconds.")
            raise SystemExit(2)
        stop = threading.Event()

        def request_stop(signum, frame) -> None:
            stop.set()  # the loop finishes the run in progress, then returns

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        jobs = scheduled_jobs()
        # A job without a period runs every --interval; the loop wakes for the shortest.
        for job in jobs.values():
            job.every_seconds = job.every_seconds or interval
        tick = min(job.every_seconds for job in jobs.values() if job.every_seconds)
        turns = ", ".join(
            f"{name} every {job.every_seconds or interval:g} s" for name, job in jobs.items()
        )
        self.stdout.write(f"Scheduler started: {turns}.")

        runs = run_every(lambda: run_jobs(jobs, write=self.stdout.write), interval=tick, stop=stop)
        self.stdout.write(f"Scheduler stopped after {runs} runs.")
