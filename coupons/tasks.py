"""The coupons app's background work (decision 1024): thin tasks, each calling one service,
each safe to run twice. The periodic ones are sent by celery beat (CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from coupons import issuing
from coupons.auto_issue import jobs


@shared_task(name="coupons.counters_reconcile")
def counters_reconcile() -> str:
    """Lower every Redis count above the database's (coupons/issuing/reconcile.py)."""
    return issuing.coupon_counters_reconcile()


@shared_task(name="coupons.auto_issue_relay")
def auto_issue_relay() -> str | None:
    """Send each due automatic issue, taken under a lease, to a worker."""
    return jobs.auto_issue_relay(lambda task_id, attempt: auto_issue_one.delay(task_id, attempt))


@shared_task(name="coupons.auto_issue_one")
def auto_issue_one(task_id: int, attempt: int) -> str | None:
    """Issue one automatic issue taken for `attempt` (nothing when it is no longer its)."""
    return jobs.auto_issue_taken(task_id, attempt)
