"""The events' outbox at a scrape of /metrics (named in METRICS_COLLECTORS): how many tasks wait
and how long the oldest due one has waited, the backlog an alert watches (a relay or a worker
that stopped shows here first). Two reads on the (state, next_attempt_at) index, whatever the
size of the table of settled tasks."""

from django.db.models import Min
from prometheus_client.core import GaugeMetricFamily

from core import clock
from coupons.models.auto_issue import AutoIssueTask


class AutoIssueCollector:
    def collect(self):
        pending = AutoIssueTask.objects.filter(state=AutoIssueTask.State.PENDING)
        yield GaugeMetricFamily(
            "coupons_auto_issue_pending",
            "Coupons earned by events and not issued yet (due or waiting to retry).",
            value=pending.count(),
        )
        now = clock.now()
        oldest = pending.filter(next_attempt_at__lte=now).aggregate(due=Min("next_attempt_at"))
        yield GaugeMetricFamily(
            "coupons_auto_issue_oldest_due_seconds",
            "How long the oldest due automatic issue has waited (0: none due).",
            value=0 if oldest["due"] is None else (now - oldest["due"]).total_seconds(),
        )
