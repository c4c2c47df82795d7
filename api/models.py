from django.conf import settings
from django.db import models


class IdempotencyRecord(models.Model):
    """One user's use of one Idempotency-Key: inserted (and committed) before the request
    runs, completed with the answer after it. `response_status` is NULL while it runs.
    `effect_id` is written in the same transaction as the command's effect (the coupon a
    claim issued, the order a checkout made or paid), so a record whose answer was lost still
    says that the work committed (docs/decisions/0322-idempotency-lease.md)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # SHA-256 of the key, hex: unique per user whatever the column's collation would make of
    # the raw key (case, trailing spaces), and a fixed width for the index.
    key_digest = models.CharField(max_length=64)
    key = models.CharField(max_length=64)
    # SHA-256 over method, full path and body: "the same request" for a replay.
    request_digest = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True)
    response_body = models.TextField(null=True)  # JSON as rendered; NULL while running
    created_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True)
    effect_id = models.BigIntegerField(null=True)  # the id of what the command committed

    class Meta:
        db_table = "idempotency_records"
        constraints = [
            models.UniqueConstraint(fields=["user", "key_digest"], name="idempotency_user_key"),
            models.CheckConstraint(
                condition=(
                    models.Q(response_status__isnull=True, completed_at__isnull=True)
                    | models.Q(response_status__isnull=False, completed_at__isnull=False)
                ),
                name="idempotency_completed_with_status",
            ),
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created_at")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key}"
