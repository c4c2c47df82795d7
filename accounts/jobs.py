"""The accounts app's periodic job, run by `manage.py run_scheduler` (ops) as listed in the
setting SCHEDULED_JOBS."""

from django.core.management import call_command


def flush_expired_tokens() -> str:
    """Delete the refresh tokens past their expiry from simplejwt's outstanding list (and
    their blacklist entries): simplejwt's own `flushexpiredtokens`, so its rule stays its own."""
    call_command("flushexpiredtokens")
    return "Flushed expired refresh tokens."
