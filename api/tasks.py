"""The API plumbing's background work, sent by celery beat (CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from api.idempotency import records_purge


@shared_task(name="api.purge_idempotency_records")
def purge_idempotency_records() -> str | None:
    """Delete the Idempotency-Key records older than IDEMPOTENCY_KEY_HOURS, in batches."""
    deleted = records_purge()
    return f"Deleted {deleted} expired idempotency records." if deleted else None
