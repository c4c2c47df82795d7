"""The one clock. Code calls `clock.now()` through the module so tests can move time."""

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    """The current time, timezone-aware, truncated to the millisecond the database keeps."""
    current = timezone.now()
    return current.replace(microsecond=current.microsecond // 1000 * 1000)
