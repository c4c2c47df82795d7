"""The one definition of how the app is served, read by the image's CMD (Dockerfile), by
`make run` (scripts/serve) and by the tests that stop, freeze and kill its database
(tests/ops/test_shipped_server.py, tests/ops/test_database_outage.py).

Threaded workers (gthread): a request stuck on a stalled database holds one thread, not a
whole worker, and the database breaker (ops/database_faults.py) keeps new requests from
joining it. The claims in flight when it froze still hold every thread for up to the read
timeout, so /healthz has threads of its own (config/gunicorn_worker.py, decision 0644). The
main thread of each worker keeps sending gunicorn its heartbeat meanwhile, so a long freeze
does not get workers killed by `timeout` (a sync worker blocked that long is). Numbers:
docs/decisions/0320-*.md."""

import os
import shutil
import tempfile

from django.conf import settings

wsgi_app = "config.wsgi:application"

# gunicorn's own log lines (the master's, and a worker's before it loads the app) in the app's
# time zone: Django sets TZ from TIME_ZONE when its settings load, which this process would
# otherwise never do, so under `make run` they were in UTC beside the app's lines in Beijing
# time. The settings module as config/wsgi.py chooses it.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
log_time_zone = settings.TIME_ZONE  # reading a setting loads them, and sets TZ
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
# gthread, with HEALTH_THREADS more threads per worker that serve only /healthz.
worker_class = "config.gunicorn_worker.HealthReservedWorker"
# Each thread may hold one database connection (CONN_MAX_AGE): workers x threads connections.
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
# A worker that stops sending its heartbeat this long is killed and replaced.
timeout = 30
graceful_timeout = 30
# Idle keep-alive connections (from nginx's upstream pool) are closed after this long.
keepalive = 5
accesslog = "-"
# Above nginx's limits (4 KiB per request line or header line, deploy/nginx/), so gunicorn never
# answers a request nginx passed with its own HTML 414/431: nginx refuses first, in the API's
# envelope (decision 0636). gunicorn's largest request line, its largest header count.
limit_request_line = 8190
limit_request_fields = 32768
limit_request_field_size = 8190
# gunicorn 27's control interface listens on one socket per OS user (~/.gunicorn/gunicorn.ctl),
# shared by every server that user runs on the machine, so one server's control could reach
# another's. Nothing here uses it: off.
control_socket_disable = True
# Each access line names the request's id (ops/vitals.py), as the app's own log lines do.
access_log_format = (
    '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %({x-request-id}o)s'
)


def on_starting(server) -> None:
    """/metrics adds up every worker's values: each writes them to files in one directory of
    this server's (prometheus_client's multiprocess mode), set here in the master, so every
    worker forked from it has it before it imports prometheus_client. A directory of the
    operator's (PROMETHEUS_MULTIPROC_DIR) is emptied first: values of an earlier server would
    be counted as this one's."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    else:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="coupons-metrics-")
        server.made_metrics_directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]


def on_exit(server) -> None:
    """The metrics directory made at start goes with the server."""
    made = getattr(server, "made_metrics_directory", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


def child_exit(server, worker) -> None:
    """A worker's gauges leave with it (its counters stay counted)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
