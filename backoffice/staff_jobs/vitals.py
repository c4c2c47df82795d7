"""Staff jobs at a scrape of /metrics (named in METRICS_COLLECTORS): how many wait for a worker,
run, or run unheard of (their worker lost), how long the oldest waiting one has waited, and
how many failed in the last day. Reads on the (state, heartbeat_at) index."""

from datetime import timedelta

from django.db.models import Min
from prometheus_client.core import GaugeMetricFamily

from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.running import stale_before
from core import clock

FAILED_WITHIN = timedelta(days=1)


class StaffJobsCollector:
    def collect(self):
        jobs = GaugeMetricFamily(
            "coupons_staff_jobs",
            "Staff jobs (imports, grants from a file, exports) not finished, by what they do.",
            labels=["state"],
        )
        running = StaffJob.objects.filter(state=StaffJob.State.RUNNING)
        lost = running.filter(heartbeat_at__lt=stale_before()).count()
        waiting = StaffJob.objects.filter(state=StaffJob.State.QUEUED)
        jobs.add_metric(["waiting"], waiting.count())
        jobs.add_metric(["running"], running.count() - lost)
        jobs.add_metric(["lost"], lost)
        yield jobs
        now = clock.now()
        oldest = waiting.aggregate(since=Min("created_at"))["since"]
        yield GaugeMetricFamily(
            "coupons_staff_jobs_oldest_waiting_seconds",
            "How long the oldest staff job has waited for a worker (0: none waits).",
            value=0 if oldest is None else (now - oldest).total_seconds(),
        )
        failed = StaffJob.objects.filter(
            state=StaffJob.State.FAILED, heartbeat_at__gte=now - FAILED_WITHIN
        )
        yield GaugeMetricFamily(
            "coupons_staff_jobs_failed_last_day",
            "Staff jobs that failed in the last 24 hours.",
            value=failed.count(),
        )
