"""The one-second watches of the service, in one small long-running process: every job the
setting SCHEDULED_JOBS names (the epoch watch, user facts to forget), each on a thread of its
own, every so many seconds. They stay out of the task queue (decision 1024): a backlog of queued
work, or a broker away, must never delay the watches that bound how long a copy in Redis may
outlive the truth. The jobs are dotted paths, so ops imports no app. `make run` and
docker-compose start it beside the app's server and the Celery worker; SIGTERM or SIGINT stops
it after the runs in progress."""

import logging
import signal
import threading
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
    except DatabaseError as error:
        name = getattr(job, "__name__", repr(job))
        logger.warning(
            "scheduled job %s failed on the database (%r); retrying next interval", name, error
        )
    except Exception:
        logger.exception("scheduled job failed; retrying next interval")
    finally:
        close_old_connections()  # a long-lived process must not keep a dead connection
    return None


@dataclass
class ScheduledJob:
    """One entry of SCHEDULED_JOBS: the callable, and how often it runs (None: every
    --interval). It runs at start, then once per period."""

    run: Callable[[], str | None]
    every_seconds: float | None = None


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
        for job in jobs.values():
            job.every_seconds = job.every_seconds or interval
        turns = ", ".join(f"{name} every {job.every_seconds:g} s" for name, job in jobs.items())
        self.stdout.write(f"Scheduler started: {turns}.")

        runs = run_each_on_its_thread(jobs, write=self.stdout.write, stop=stop)
        self.stdout.write(f"Scheduler stopped after {runs} runs.")


def run_each_on_its_thread(
    jobs: dict[str, ScheduledJob], *, write: Callable[[str], object], stop: threading.Event
) -> int:
    """Every job on a thread of its own, each every its period, until `stop` is set; the lines
    the jobs return are written (one at a time). Returns how many runs were made in all."""
    written = threading.Lock()
    runs: dict[str, int] = {}

    def run_job(name: str, job: ScheduledJob) -> None:
        def once() -> None:
            line = job.run()
            if line:
                with written:
                    write(str(line))

        assert job.every_seconds is not None
        runs[name] = run_every(once, interval=job.every_seconds, stop=stop)

    threads = [
        threading.Thread(target=run_job, args=(name, job), name=f"job: {name}")
        for name, job in jobs.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(runs.values())
