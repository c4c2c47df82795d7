"""What the team on call watches (SPEC section 25): /metrics behind its token, counting claims,
requests, round trips and replays; a request id on every answer and log line; liveness apart
from readiness, and a slow database that is not called down."""

import copy
import io
import json
import logging
import logging.config
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from rest_framework.test import APIClient

from config.settings import base as base_settings
from core import clock
from coupons.services import templates
from ops.health import monitor
from ops.vitals import KNOWN_METHODS, RequestVitalsMiddleware
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url
from tests.support.metrics import TOKEN, scrape

ROOT = Path(__file__).resolve().parents[2]


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("token", "authorization"),
    [("", ""), ("", "Bearer "), (TOKEN, ""), (TOKEN, "Bearer wrong"), (TOKEN, TOKEN)],
)
def test_metrics_are_not_found_without_the_token(settings, token, authorization):
    settings.METRICS_TOKEN = token

    response = APIClient().get("/metrics", HTTP_AUTHORIZATION=authorization)

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.django_db(transaction=True)
def test_metrics_count_claims_by_outcome_requests_by_route_and_round_trips(settings):
    # given: a template of one coupon, won by one shopper and refused to the next
    now = clock.now()
    template = templates.coupon_template_publish(
        name="Vitals",
        type="direct",
        value=500,
        total=1,
        valid_from=now - timedelta(hours=1),
        valid_until=now + timedelta(hours=1),
    )
    before = scrape(settings)
    winner, loser = UserFactory(), UserFactory()

    # when
    won = bearer_client(winner).post(claim_url(template))
    refused = bearer_client(loser).post(claim_url(template))
    after = scrape(settings)

    # then
    assert (won.status_code, refused.json()["code"]) == (201, "sold_out")

    def grew(name: str, **labels) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("coupons_claims_total", outcome="won", decided_by="database") == 1
    assert grew("coupons_claims_total", outcome="sold_out", decided_by="redis") == 1
    assert grew("coupons_claim_screen_answers_total", answer="sold_out") == 1
    route = "api/coupons/<id:template_id>/claim"
    assert grew("coupons_http_requests_total", route=route, method="POST", status="201") == 1
    assert grew("coupons_http_requests_total", route=route, method="POST", status="409") == 1
    assert grew("coupons_http_request_seconds_count", route=route) == 2
    assert grew("coupons_redis_round_trip_seconds_count") >= 2
    assert grew("coupons_database_round_trip_seconds_count") >= 1
    # The writer the app reaches is named; the shared MariaDB is no Galera node.
    writers = [key for key in after if key[0] == "coupons_database_writer_info"]
    assert len(writers) == 1
    assert ("coupons_database_cluster_size", ()) not in after


@pytest.mark.django_db
def test_invented_methods_add_no_series(settings):
    """A label takes what the client sends: a method nobody defined counts as `other`, so a
    stranger cannot grow /metrics (3,000 invented methods had made 3,000 series per worker)."""
    before = scrape(settings)
    client = APIClient()
    for number in range(50):
        client.generic(f"X{number}", "/api/coupons")
    client.generic("GET", "/api/coupons")
    after = scrape(settings)

    methods = {
        dict(labels)["method"] for name, labels in after if name == "coupons_http_requests_total"
    }
    assert methods <= KNOWN_METHODS | {"other"}
    grown = sum(
        count - before.get(key, 0.0)
        for key, count in after.items()
        if key[0] == "coupons_http_requests_total" and dict(key[1])["method"] == "other"
    )
    assert grown == 50


@pytest.mark.django_db
def test_an_idempotent_replay_is_counted(settings, user):
    client = bearer_client(user)
    before = scrape(settings)

    # An answer that is kept: a checkout refused for bad input, then the same request again.
    answers = [
        client.post("/api/orders", {"items": []}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        for _ in range(2)
    ]
    after = scrape(settings)

    assert [answer.status_code for answer in answers] == [400, 400]
    assert answers[1]["Idempotent-Replayed"] == "true"
    assert (
        value(after, "coupons_idempotent_replays_total", kind="answer")
        - value(before, "coupons_idempotent_replays_total", kind="answer")
        == 1
    )


@pytest.mark.django_db
def test_every_answer_carries_a_request_id_and_only_a_trusted_proxy_may_give_it(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    given = "a" * 32

    own = APIClient().get("/livez")
    from_a_stranger = APIClient(REMOTE_ADDR="203.0.113.9").get("/livez", HTTP_X_REQUEST_ID=given)
    from_the_proxy = APIClient(REMOTE_ADDR="10.0.0.2").get("/livez", HTTP_X_REQUEST_ID=given)
    forged = APIClient(REMOTE_ADDR="10.0.0.2").get("/livez", HTTP_X_REQUEST_ID="x\nfake line")

    assert re.fullmatch(r"[0-9a-f]{32}", own["X-Request-ID"])
    assert from_a_stranger["X-Request-ID"] != given
    assert from_the_proxy["X-Request-ID"] == given
    assert re.fullmatch(r"[0-9a-f]{32}", forged["X-Request-ID"])


def test_a_json_log_line_names_its_request():
    """The shipped settings' JSON formatter and request-id filter (the test settings log
    nothing), on a stream of the test's."""
    shipped = base_settings.LOGGING
    buffer = io.StringIO()
    config = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": copy.deepcopy(shipped["formatters"]["json"])},
        "filters": {"request_id": copy.deepcopy(shipped["filters"]["request_id"])},
        "handlers": {
            "memory": {
                "class": "logging.StreamHandler",
                "stream": buffer,
                "formatter": "json",
                "filters": ["request_id"],
            }
        },
        "loggers": {"vitals.test": {"handlers": ["memory"], "level": "INFO", "propagate": False}},
    }
    logging.config.dictConfig(config)

    def view(request):
        logging.getLogger("vitals.test").info("inside the request")
        return HttpResponse()

    response = RequestVitalsMiddleware(view)(RequestFactory().get("/livez"))
    logging.getLogger("vitals.test").info("outside")

    inside, outside = (json.loads(line) for line in buffer.getvalue().splitlines())
    assert inside["request_id"] == response["X-Request-ID"]
    assert inside["message"] == "inside the request"
    assert {"time", "level", "logger"} <= inside.keys()
    assert outside["request_id"] == "-"


@pytest.mark.django_db
def test_liveness_asks_nothing_of_the_database(monkeypatch):
    monkeypatch.setattr(monitor, "_ping", lambda: (False, ()))

    alive = APIClient().get("/livez")
    ready = APIClient().get("/readyz")

    assert (alive.status_code, alive.json()) == (200, {"status": "alive"})
    assert (ready.status_code, ready.json()) == (503, {"status": "down"})


@pytest.mark.django_db
def test_a_slow_database_is_not_down_until_it_has_said_nothing_for_the_grace(monkeypatch, settings):
    """Under load a check can take longer than a probe waits (HEALTH_TIMEOUT): the database's
    last answer stands for HEALTH_SLOW_GRACE, then silence is down."""
    settings.HEALTH_SLOW_GRACE = 1.5
    answers = iter([0.0, 3.0])  # the first check is quick, the next hangs for 3 s

    def ping():
        time.sleep(next(answers))
        return True, ()

    monkeypatch.setattr(monitor, "_ping", ping)
    assert APIClient().get("/readyz").status_code == 200  # seen up

    started = time.monotonic()
    slow = APIClient().get("/readyz")  # the check now hangs
    took = time.monotonic() - started
    time.sleep(settings.HEALTH_SLOW_GRACE)
    silent = APIClient().get("/readyz")

    assert (slow.status_code, slow.json()) == (200, {"status": "ok"})
    assert took < 1
    assert (silent.status_code, silent.json()) == (503, {"status": "down"})


@pytest.mark.django_db
def test_the_favicon_every_browser_asks_for_is_found():
    """Swagger UI and simpleui's frame have no <link rel="icon">: /favicon.ico was a 404 in
    every page's console and log."""
    icon = APIClient().get("/favicon.ico")

    assert icon.status_code == 301
    assert icon["Location"].endswith("ops/favicon.png")
    assert (ROOT / "ops/static/ops/favicon.png").read_bytes().startswith(b"\x89PNG")
