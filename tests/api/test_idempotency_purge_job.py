"""The idempotency cleanup (api.tasks.purge_idempotency_records, sent hourly by celery beat:
CELERY_BEAT_SCHEDULE): records past IDEMPOTENCY_KEY_HOURS go, younger ones stay."""

from datetime import timedelta

import pytest

from api.models import IdempotencyRecord
from api.tasks import purge_idempotency_records
from core import clock
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db


def record(user, key: str, *, age: timedelta) -> None:
    IdempotencyRecord.objects.create(
        user=user,
        key_digest=key.ljust(64, "0"),
        key=key,
        request_digest="0" * 64,
        created_at=clock.now() - age,
    )


def test_the_job_purges_records_past_their_lifetime_and_says_how_many(settings):
    settings.IDEMPOTENCY_KEY_HOURS = 24
    user = UserFactory()
    record(user, "old", age=timedelta(hours=30))
    record(user, "expired", age=timedelta(hours=24, seconds=5))
    record(user, "young", age=timedelta(hours=23))

    assert purge_idempotency_records() == "Deleted 2 expired idempotency records."
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["young"]


def test_the_job_is_quiet_when_nothing_expired():
    record(UserFactory(), "young", age=timedelta(minutes=5))

    assert purge_idempotency_records() is None
    assert IdempotencyRecord.objects.count() == 1
