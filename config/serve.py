"""The one definition of how the app is served (decision 1033): granian's WSGI server, read
by the image's CMD (Dockerfile), `make run` (scripts/serve), the drill and the tests that
stop, freeze and kill the shipped server's database.

    python -m config.serve [--bind HOST:PORT] [--workers N] [--threads N]

Each worker process runs SERVER_THREADS blocking threads for requests: a request stuck on a
stalled database holds one thread, not a worker, and the database breaker
(ops/database_faults.py) keeps new requests from joining it. The probes have threads of their
own in every worker (PROBE_BIND, ops/probe_listener.py, decision 1032), so a frozen database
holding every request thread does not starve them. A worker that dies is started again; on
SIGTERM or SIGINT the server stops taking connections and lets the requests in flight finish
(at most GRACEFUL_SECONDS)."""

import argparse
import logging
import os
import shutil
import tempfile

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.log import LogLevels
from granian.server import MPServer as Server  # worker processes (a GIL build of Python)

TARGET = "config.wsgi:application"
# The longest a stopping worker is given for the requests it holds (a request is bounded by
# its own timeouts: the database's 2 s connect and 8 s read, retried once; Redis's).
GRACEFUL_SECONDS = 30
# A request's header lines may take this long to arrive (milliseconds); nginx in front sends
# them at once.
HEADER_READ_MILLISECONDS = 10_000
# The server's own lines (the master's, a worker's start and stop) and the access log, in the
# app's time zone (the settings set TZ when they load, below) and gunicorn's old layout.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "server": {
            "format": "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s",
            "datefmt": "%Y-%m-%d %H:%M:%S %z",
        },
        "access": {"format": "%(message)s"},
    },
    "filters": {"threads_on_purpose": {"()": "config.serve.ThreadsOnPurpose"}},
    "handlers": {
        "server": {
            "class": "logging.StreamHandler",
            "formatter": "server",
            "filters": ["threads_on_purpose"],
        },
        "access": {"class": "logging.StreamHandler", "formatter": "access"},
    },
    "loggers": {
        "_granian": {"handlers": ["server"], "level": "INFO", "propagate": False},
        "granian.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}
ACCESS_FORMAT = (
    '%(addr)s - [%(time)s] "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).1fms'
    ' "%(header{user-agent})s"'
)


class ThreadsOnPurpose(logging.Filter):
    """Drops granian's warning that more threads than about twice the cores "seems quite
    high": ours wait on the database and Redis, not for a core (a frozen database holds them;
    decision 0320), and the warning at every start would read as a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Configuration allows spawning up to")


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m config.serve", description=__doc__)
    parser.add_argument("--bind", default=os.environ.get("SERVER_BIND", "127.0.0.1:8000"))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("SERVER_WORKERS", "2")))
    # Each thread may hold one database connection (CONN_MAX_AGE): workers x threads of them.
    parser.add_argument("--threads", type=int, default=int(os.environ.get("SERVER_THREADS", "8")))
    return parser.parse_args(argv)


def server(options: argparse.Namespace) -> Server:
    host, _, port = options.bind.rpartition(":")
    return Server(
        TARGET,
        address=host.strip("[]"),
        port=int(port),
        interface=Interfaces.WSGI,
        workers=options.workers,
        blocking_threads=options.threads,
        http=HTTPModes.http1,  # what nginx speaks to its upstream
        websockets=False,
        http1_settings=HTTP1Settings(header_read_timeout=HEADER_READ_MILLISECONDS),
        respawn_failed_workers=True,
        workers_kill_timeout=GRACEFUL_SECONDS,
        log_level=LogLevels.info,
        log_dictconfig=LOGGING,
        log_access=True,
        log_access_format=ACCESS_FORMAT,
    )


def metrics_directory() -> str | None:
    """/metrics adds up every worker's values: each writes them to files in one directory of
    this server's (prometheus_client's multiprocess mode), set here before any worker starts.
    A directory of the operator's (PROMETHEUS_MULTIPROC_DIR) is emptied first: values of an
    earlier server would be counted as this one's. Returns the directory made here, if any."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        return None
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="coupons-metrics-")
    return os.environ["PROMETHEUS_MULTIPROC_DIR"]


def load_settings() -> None:
    """The settings module as config/wsgi.py chooses it, loaded here: they set TZ from
    TIME_ZONE, so the server's own lines are in the app's time zone (under `make run` they
    were in UTC beside the app's in Beijing time), and a bad setting stops the server at once."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    from django.conf import settings

    settings.TIME_ZONE  # noqa: B018  (reading a setting loads them)


def main(argv: list[str] | None = None) -> None:
    options = arguments(argv)
    load_settings()
    made = metrics_directory()
    try:
        server(options).serve()
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
