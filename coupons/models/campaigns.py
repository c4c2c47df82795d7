"""A campaign: a name, its dates and an optional budget of discount in cents. `spent` is the
discount of coupons used at checkout that were not given back (cancel, expiry, refund),
changed only by one guarded UPDATE in the order's transaction (coupons/campaign_budget.py)."""

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from core.money import MAX_AMOUNT_CENTS
from coupons.fields import MillisecondDateTimeField

CAMPAIGN_NAME_MAX_LENGTH = 64


class Campaign(models.Model):
    name = models.CharField(_("name"), max_length=CAMPAIGN_NAME_MAX_LENGTH)
    starts_at = MillisecondDateTimeField(_("starts at"))
    ends_at = MillisecondDateTimeField(_("ends at"))
    # None: no budget (nothing is refused for money).
    budget = models.PositiveBigIntegerField(_("budget"), null=True, blank=True)
    spent = models.PositiveBigIntegerField(
        _("budget used"), default=0, db_default=0, editable=False
    )
    created_at = MillisecondDateTimeField(auto_now_add=True)
    updated_at = MillisecondDateTimeField(auto_now=True)

    class Meta:
        db_table = "coupon_campaigns"
        verbose_name = _("campaign")
        verbose_name_plural = _("campaigns")
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="campaign_dates"),
            models.CheckConstraint(
                condition=Q(budget__isnull=True) | Q(budget__lte=MAX_AMOUNT_CENTS),
                name="campaign_budget_bounded",
            ),
            # Never overspent: the take's guard, held by the database too.
            models.CheckConstraint(
                condition=Q(budget__isnull=True) | Q(spent__lte=F("budget")),
                name="campaign_spent_within_budget",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def money_terms(_kind: str | None = None) -> tuple[str, ...]:
        """The fields the audit trail shows as money (backoffice/audit_messages.py)."""
        return ("budget", "spent")

    @property
    def budget_left(self) -> int | None:
        return None if self.budget is None else self.budget - self.spent
