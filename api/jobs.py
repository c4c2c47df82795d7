"""The API plumbing's periodic job, run by `manage.py run_scheduler` (ops) as listed in the
setting SCHEDULED_JOBS."""

from api.idempotency import records_purge


def purge_idempotency_records() -> str | None:
    """Delete the Idempotency-Key records older than IDEMPOTENCY_KEY_HOURS, in batches."""
    deleted = records_purge()
    return f"Deleted {deleted} expired idempotency records." if deleted else None
