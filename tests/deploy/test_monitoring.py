"""deploy/monitoring: every metric the alert rules and the Grafana dashboard query is one the
app serves, so a renamed metric cannot leave an alert that never fires."""

import json
import re
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
METRIC_NAME = re.compile(r"\b(coupons_[a-z_]+)")
HISTOGRAM_SERIES = ("_bucket", "_count", "_sum")


def queried_metrics() -> dict[str, set[str]]:
    """Metric names by the file that queries them."""
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    alerts = {rule["expr"] for group in rules["groups"] for rule in group["rules"]}
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    panels = {target["expr"] for panel in dashboard["panels"] for target in panel["targets"]}
    return {
        name: {metric for expr in exprs for metric in METRIC_NAME.findall(expr)}
        for name, exprs in (("alerts.yml", alerts), ("grafana-dashboard.json", panels))
    }


@pytest.mark.django_db
def test_every_queried_metric_is_served(settings):
    settings.METRICS_TOKEN = "monitoring-test"
    served_text = (
        APIClient().get("/metrics", HTTP_AUTHORIZATION="Bearer monitoring-test").content.decode()
    )
    served = set(re.findall(r"^# TYPE (\w+) ", served_text, flags=re.MULTILINE))
    # Counters are typed without their _total; the Galera-only gauge is absent on one server.
    served |= {f"{name}_total" for name in served} | {"coupons_database_cluster_size"}

    for source, metrics in queried_metrics().items():
        for metric in metrics:
            base = next(
                (metric.removesuffix(s) for s in HISTOGRAM_SERIES if metric.endswith(s)), metric
            )
            assert base in served, f"{source} queries {metric}, which /metrics does not serve"
    assert queried_metrics()["alerts.yml"] >= {
        "coupons_http_requests_total",
        "coupons_http_request_seconds_bucket",
        "coupons_database_cluster_size",
        "coupons_database_writer_info",
    }
