"""The orders app's periodic jobs, run by `manage.py run_scheduler` (ops) as listed in the
setting SCHEDULED_JOBS. Each takes nothing and returns a line worth printing, or None."""

from orders import services


def expire_overdue_orders() -> str | None:
    """Cancel unpaid orders past their deadline (stock and coupon returned)."""
    run = services.orders_expire_overdue()
    if run.cancelled or run.skipped:
        return f"Expired {run.cancelled} unpaid orders (skipped {run.skipped})."
    return None
