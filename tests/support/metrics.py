"""/metrics as Prometheus reads it, for the tests of what it serves."""

from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

TOKEN = "metrics-token-of-the-test"


def scrape(settings) -> dict[tuple[str, tuple], float]:
    """Every sample /metrics answers, by name and labels."""
    settings.METRICS_TOKEN = TOKEN
    response = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
