"""The one clock. Code calls `clock.now()` through the module so tests can move time."""

from datetime import datetime

from django.utils import timezone


def truncate_to_milliseconds(moment: datetime) -> datetime:
    """The precision the database (DATETIME(3)) and the Redis scripts keep."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def now() -> datetime:
    """The current time, timezone-aware, in milliseconds."""
    return truncate_to_milliseconds(timezone.now())
