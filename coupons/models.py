from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Length, Trim
from django.db.models.lookups import GreaterThan

from config.limits import MAX_BIGINT, MAX_INT_UNSIGNED
from coupons.fields import MillisecondDateTimeField

# Storage bounds of the columns (BIGINT UNSIGNED capped to what every backend stores signed,
# INT UNSIGNED). Anything a client sends beyond them is a 400, never an overflow.
MAX_AMOUNT = MAX_BIGINT
MAX_COUNT = MAX_INT_UNSIGNED
NAME_MAX_LENGTH = 64


class CouponTemplate(models.Model):
    class Type(models.TextChoices):
        DIRECT = "direct", "Direct (flat amount off)"
        THRESHOLD = "threshold", "Threshold (spend X, get Y off)"

    name = models.CharField(max_length=NAME_MAX_LENGTH)
    type = models.CharField(max_length=16, choices=Type.choices)
    value = models.PositiveBigIntegerField(help_text="Face value in cents.")
    min_amount = models.PositiveBigIntegerField(default=0, help_text="Threshold in cents.")
    total = models.PositiveIntegerField(help_text="How many may be issued.")
    per_user_limit = models.PositiveIntegerField(default=1)
    valid_from = MillisecondDateTimeField()
    valid_until = MillisecondDateTimeField()
    # Claims issued so far, incremented under the row lock in the claim transaction: keeps a
    # claim O(1) at any volume and is the monotonic version of the Redis total counter.
    claimed_count = models.PositiveIntegerField(default=0, editable=False)
    created_at = MillisecondDateTimeField(auto_now_add=True)
    updated_at = MillisecondDateTimeField(auto_now=True)

    class Meta:
        db_table = "coupon_templates"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=GreaterThan(Length(Trim("name")), 0),
                name="coupon_template_name_not_blank",
            ),
            models.CheckConstraint(
                condition=Q(type__in=["direct", "threshold"]), name="coupon_template_type_known"
            ),
            models.CheckConstraint(condition=Q(value__gt=0), name="coupon_template_value_positive"),
            models.CheckConstraint(
                condition=Q(type="direct", min_amount=0)
                | Q(type="threshold", min_amount__gte=F("value")),
                name="coupon_template_min_amount_fits_type",
            ),
            models.CheckConstraint(
                condition=Q(total__gte=1), name="coupon_template_total_positive"
            ),
            models.CheckConstraint(
                condition=Q(per_user_limit__gte=1), name="coupon_template_per_user_limit_positive"
            ),
            models.CheckConstraint(
                condition=Q(valid_from__lt=F("valid_until")), name="coupon_template_window_ordered"
            ),
            models.CheckConstraint(
                condition=Q(claimed_count__lte=F("total")),
                name="coupon_template_claimed_within_total",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class UserCoupon(models.Model):
    class Status(models.TextChoices):
        UNUSED = "unused"
        USED = "used"

    # The composite indexes below lead with each foreign key, so the single-column ones
    # Django would add are redundant.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="coupons", db_index=False
    )
    template = models.ForeignKey(
        CouponTemplate, on_delete=models.CASCADE, related_name="user_coupons", db_index=False
    )
    # The user's n-th coupon of the template has slot n. Unique per (template, user), so two
    # concurrent claims of one user cannot both take the same place under the limit; the
    # claim's guarded UPDATE admits a slot only while slot <= per_user_limit.
    slot = models.PositiveIntegerField(editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNUSED)
    used_at = MillisecondDateTimeField(null=True, blank=True)
    created_at = MillisecondDateTimeField(auto_now_add=True)
    updated_at = MillisecondDateTimeField(auto_now=True)

    class Meta:
        db_table = "user_coupons"
        indexes = [
            models.Index(fields=["user", "status", "id"], name="user_coupon_user_status_id"),
        ]
        constraints = [
            # Also the (template_id, user_id) index that per-user counts read.
            models.UniqueConstraint(
                fields=["template", "user", "slot"], name="user_coupon_template_user_slot"
            ),
            models.CheckConstraint(condition=Q(slot__gte=1), name="user_coupon_slot_positive"),
            models.CheckConstraint(
                condition=Q(status="unused", used_at__isnull=True)
                | Q(status="used", used_at__isnull=False),
                name="user_coupon_used_at_matches_status",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.template_id}/{self.user_id}#{self.pk}"
