"""A user's coupon (SPEC sections 4 and 10), registered from coupons.models; its template is
CouponTemplate (coupons/models/templates.py)."""

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from coupons.coupon_status import CouponStatus, coupon_status_q
from coupons.fields import MillisecondDateTimeField
from coupons.grant_reasons import GRANT_REASON_MAX_LENGTH, reason_key


class UserCouponQuerySet(models.QuerySet):
    def with_status(self, status: CouponStatus, *, now: datetime) -> "UserCouponQuerySet":
        return self.filter(coupon_status_q(status, now=now))


class UserCoupon(models.Model):
    class Status(models.TextChoices):
        UNUSED = "unused", _("unused")
        USED = "used", _("used")

    class Source(models.TextChoices):
        CLAIM = "claim", _("claim")
        CODE = "code", _("code")
        GRANT = "grant", _("grant")
        SIGNUP = "signup", _("on sign-up")  # issued by an event (SPEC section 28)
        ORDER = "order", _("after a paid order")

    # The composite indexes below lead with each foreign key, so the single-column ones
    # Django would add are redundant.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="coupons",
        db_index=False,
        verbose_name=_("user"),
    )
    template = models.ForeignKey(
        "coupons.CouponTemplate",
        on_delete=models.CASCADE,
        related_name="user_coupons",
        db_index=False,
        verbose_name=_("template"),
    )
    # The user's n-th coupon of the template has slot n. Unique per (template, user), so two
    # concurrent claims of one user cannot both take the same place under the limit; the
    # claim's guarded UPDATE admits a slot only while slot <= per_user_limit.
    slot = models.PositiveIntegerField(editable=False)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.UNUSED, verbose_name=_("status")
    )
    used_at = MillisecondDateTimeField(null=True, blank=True, verbose_name=_("used at"))
    # The coupon's own use window, stamped when it is issued (SPEC section 10): editing the
    # template's window later changes who may still claim, never the coupons already held.
    valid_from = MillisecondDateTimeField(verbose_name=_("valid from"))
    valid_until = MillisecondDateTimeField(verbose_name=_("valid until"))
    source = models.CharField(
        max_length=16, choices=Source.choices, default=Source.CLAIM, verbose_name=_("source")
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text=_("The staff user who granted it (grants only)."),
        verbose_name=_("granted by"),
    )
    grant_reason = models.CharField(
        max_length=GRANT_REASON_MAX_LENGTH, null=True, blank=True, verbose_name=_("grant reason")
    )
    # coupons.grant_reasons.reason_key(grant_reason): what "the same reason" compares.
    grant_reason_key = models.CharField(max_length=64, null=True, blank=True, editable=False)
    # The campaign budget its discount drew on while an order holds it, and how much (SPEC
    # section 27): given back there, whatever the template's campaign is by then. A plain id:
    # no index or foreign key on this table for a rare lookup.
    charged_campaign_id = models.BigIntegerField(null=True, blank=True, editable=False)
    charged_amount = models.PositiveBigIntegerField(default=0, db_default=0, editable=False)
    # When an event's coupon was taken back because the order that earned it was refunded
    # whole (coupons/auto_issue/events.py): its window ends then, and an unpaid order holding
    # it cannot be paid with it.
    withdrawn_at = MillisecondDateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("withdrawn at")
    )
    created_at = MillisecondDateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = MillisecondDateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = UserCouponQuerySet.as_manager()

    class Meta:
        db_table = "user_coupons"
        verbose_name = _("user coupon")
        verbose_name_plural = _("user coupons")
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
            models.CheckConstraint(
                condition=Q(valid_from__lt=F("valid_until")), name="user_coupon_window_ordered"
            ),
            models.CheckConstraint(
                condition=Q(source__in=["claim", "code"], grant_reason__isnull=True)
                | Q(source__in=["grant", "signup", "order"], grant_reason__isnull=False),
                name="user_coupon_grant_reason_matches_source",
            ),
            models.CheckConstraint(
                condition=Q(source="grant") | Q(granted_by__isnull=True),
                name="user_coupon_granted_by_only_for_grants",
            ),
            # A grant is idempotent per (template, user, reason): running the same grant again
            # issues nothing twice, however the reason was spelled (coupons/grant_reasons.py).
            # Claims have no reason, and NULLs never collide.
            models.UniqueConstraint(
                fields=["template", "user", "grant_reason_key"],
                name="user_coupon_one_grant_per_reason",
            ),
        ]

    def __str__(self) -> str:
        # An inline row's label and the audit's name for it: words, not "10/4#18".
        return gettext("coupon #%(id)s") % {"id": self.pk}

    def save(self, *args, **kwargs) -> None:
        # The issuing core inserts with SQL of its own and sets the key there too.
        self.grant_reason_key = None if self.grant_reason is None else reason_key(self.grant_reason)
        super().save(*args, **kwargs)

    @staticmethod
    def issued_for_a_reason(source: str) -> bool:
        """A grant, or an event's issue (its reason names the event): it carries a reason,
        is one per (template, user, reason), and reaches hidden and codes-only templates."""
        return source in ("grant", "signup", "order")

    def status_at(self, now: datetime) -> CouponStatus:
        """This coupon's status at `now`: the rule of `coupon_status_q`, for one coupon."""
        if self.status == self.Status.UNUSED and now > self.valid_until:
            return CouponStatus.EXPIRED
        return CouponStatus(self.status)
