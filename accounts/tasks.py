"""The accounts app's background work, sent by celery beat (CELERY_BEAT_SCHEDULE)."""

from celery import shared_task
from django.core.management import call_command


@shared_task(name="accounts.flush_expired_tokens")
def flush_expired_tokens() -> str:
    """Delete the refresh tokens past their expiry from simplejwt's outstanding list (and
    their blacklist entries): simplejwt's own `flushexpiredtokens`, so its rule stays its own."""
    call_command("flushexpiredtokens")
    return "Flushed expired refresh tokens."
