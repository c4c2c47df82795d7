"""The periodic jobs of the service, in one small long-running process: today only the expiry of
unpaid orders (orders.services.orders_expire_overdue) every --interval seconds, so an order is
cancelled within a minute of its deadline without cron. `make run` and docker-compose start it
beside gunicorn; SIGTERM or SIGINT stops it after the job in progress (docs/DESIGN.md)."""

import logging
import signal
import threading
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError, close_old_connections

from orders import services

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
        try:
            job()
        except DatabaseError:
            logger.warning("scheduled job failed on the database; retrying next interval")
        except Exception:
            logger.exception("scheduled job failed; retrying next interval")
        finally:
            close_old_connections()  # a long-lived process must not keep a dead connection
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        stop.wait(interval)
    return runs


class Command(BaseCommand):
    help = "Run the periodic jobs (order expiry) until SIGTERM/SIGINT."

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
        self.stdout.write(f"Scheduler started: order expiry every {interval:g} s.")

        def expire_orders() -> None:
            run = services.orders_expire_overdue()
            if run.cancelled or run.skipped:
                self.stdout.write(f"Expired {run.cancelled} unpaid orders (skipped {run.skipped}).")

        runs = run_every(expire_orders, interval=interval, stop=stop)
        self.stdout.write(f"Scheduler stopped after {runs} runs.")
