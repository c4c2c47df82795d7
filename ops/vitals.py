"""What the team on call watches (SPEC section 25): the request id every log line carries, the
metrics served at /metrics (defined in core/metrics.py) and the database's cluster as the app
sees it.

/metrics is not public: it answers only a Bearer METRICS_TOKEN (compared in constant time),
and is 404, like any unknown path, to everyone else and whenever no token is set."""

import hmac
import os
import re
import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from api.exceptions import not_found
from core.drawn_ids import drawn_hex
from core.metrics import request_seconds, requests_total
from ops.log_filters import request_id
from ops.task_queue_vitals import TaskQueueCollector, app_collectors

REQUEST_ID_HEADER = "X-Request-ID"
# A proxy's id is taken as it is when it looks like one (nginx's $request_id is 32 hex digits);
# anything else is replaced, so a log line cannot be forged through the header.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{8,64}")


class RequestVitalsMiddleware:
    """Gives each request its id (the trusted proxy's X-Request-ID, or a new one), which every
    log line of the request names and the answer carries back; counts the answer by route
    pattern, method and status and times it. Right after ForwardedHeadersFromProxiesMiddleware,
    which drops an X-Request-ID that no trusted proxy set."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        current = request_id_of(request)
        token = request_id.set(current)
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(token)
        answer_counted(
            request.method, response.status_code, route=route_of(request), started=started
        )
        response[REQUEST_ID_HEADER] = current
        return response


def request_id_of(request: HttpRequest) -> str:
    """The trusted proxy's X-Request-ID when it looks like one, else a new id."""
    given = request.META.get("HTTP_X_REQUEST_ID", "")
    return given if REQUEST_ID_PATTERN.fullmatch(given) else drawn_hex(128)


def answer_counted(method: str | None, status: int, *, route: str, started: float) -> None:
    """The answer counted for /metrics by route pattern, method and status, and timed."""
    requests_total.labels(route, method_of(method), str(status)).inc()
    request_seconds.labels(route).observe(time.perf_counter() - started)


# The methods HTTP defines; any other is counted as `other`: a label takes what a client sends,
# and each new value is a series in every worker (3,000 invented methods grew /metrics 3x).
KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
)


def method_of(method: str | None) -> str:
    method = method or ""
    return method if method in KNOWN_METHODS else "other"


def route_of(request: HttpRequest) -> str:
    """The URL pattern that serves the request's path, never the path itself (an id in a label
    would make a series per order); also for an answer given before the view was found (the
    breaker's 503, /healthz by address); `unmatched` for a path no pattern serves."""
    match = request.resolver_match
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return "unmatched"
    return match.route


class DatabaseClusterCollector:
    """At each scrape: which database node the app's connection reaches (the writer, behind
    HAProxy) and, on Galera, how many nodes its cluster has. One statement, on the scrape's
    own connection; nothing when the database does not answer."""

    SQL = (
        "SELECT @@hostname, @@wsrep_on, @@wsrep_node_name,"
        " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
        "  WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE')"
    )

    def collect(self):
        if connection.vendor != "mysql":
            return
        try:
            with connection.cursor() as cursor:
                cursor.execute(self.SQL)
                hostname, wsrep_on, node_name, cluster_size = cursor.fetchone()
        except Exception:  # the database is away: its vitals are the 503s and the breaker
            return
        writer = GaugeMetricFamily(
            "coupons_database_writer_info",
            "The database node the app writes to (1 for the node it reaches now).",
            labels=["node"],
        )
        writer.add_metric([str(node_name if wsrep_on else hostname)], 1)
        yield writer
        if wsrep_on:
            yield GaugeMetricFamily(
                "coupons_database_cluster_size",
                "Nodes in the Galera cluster's primary component, as the writer sees it.",
                value=int(cluster_size or 0),
            )


def metrics_registry() -> CollectorRegistry:
    """Every worker's values (the served app, config/serve.py) or this process's, and the
    cluster's at this moment."""
    registry = CollectorRegistry()
    if values.ValueClass is not values.MutexValue:  # chosen when prometheus_client loaded
        forget_dead_workers_gauges(os.environ["PROMETHEUS_MULTIPROC_DIR"])
        MultiProcessCollector(registry)
    else:
        registry.register(_ProcessMetrics())
    registry.register(DatabaseClusterCollector())
    registry.register(TaskQueueCollector())
    for collector in app_collectors():
        registry.register(collector)
    return registry


LIVE_GAUGE_FILE = re.compile(r"^gauge_live\w+_(\d+)\.db$")


def forget_dead_workers_gauges(directory: str) -> None:
    """A worker's live gauges (the breaker's open flag) leave with it: the server replaces a
    dead worker without telling anyone, so a scrape drops the files of processes that are
    gone (their counters stay counted)."""
    for name in os.listdir(directory):
        found = LIVE_GAUGE_FILE.match(name)
        if found and not process_exists(int(found.group(1))):
            multiprocess.mark_process_dead(int(found.group(1)), directory)


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's
        return True
    return True


class _ProcessMetrics:
    """This process's own metrics (the default registry), in a registry of the scrape's."""

    def collect(self):
        return REGISTRY.collect()


def metrics(request: HttpRequest) -> HttpResponse:
    if not _token_matches(request):
        return not_found(request)
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)


def _token_matches(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    given = request.META.get("HTTP_AUTHORIZATION", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
