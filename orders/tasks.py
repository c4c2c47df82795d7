"""The orders app's background work, sent by celery beat (CELERY_BEAT_SCHEDULE). Each returns
a line worth logging, or None."""

from celery import shared_task

from orders import services


@shared_task(name="orders.expire_overdue_orders")
def expire_overdue_orders() -> str | None:
    """Cancel unpaid orders past their deadline (stock and coupon returned); safe to run twice
    at once: each order is cancelled by one conditional UPDATE under its row lock."""
    run = services.orders_expire_overdue()
    if run.cancelled or run.skipped:
        return f"Expired {run.cancelled} unpaid orders (skipped {run.skipped})."
    return None
