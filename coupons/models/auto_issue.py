"""One coupon an event earned: which template, for whom, for which event (the order, for a
paid order), and how its issuing went. Unique per (template, user, order), so a retried event
writes no second task; the coupon's reason (one per template, user and reason) makes a
retried issue give no second coupon."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from coupons.fields import MillisecondDateTimeField


class AutoIssueTask(models.Model):
    class Event(models.TextChoices):
        SIGNUP = "signup", _("sign-up")
        PAID_ORDER = "paid_order", _("paid order")

    class State(models.TextChoices):
        PENDING = "pending", _("pending")  # to issue, at next_attempt_at
        ISSUED = "issued", _("issued")
        REFUSED = "refused", _("refused")  # the template cannot issue it (sold out, ended...)
        WITHDRAWN = (
            "withdrawn",
            _("withdrawn"),
        )  # the order was refunded first, or its coupon taken back

    template = models.ForeignKey(
        "coupons.CouponTemplate",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        # No foreign key in the database: an event's insert would wait for a shared lock on a
        # template row a claim storm holds (Django still deletes tasks with their template).
        db_constraint=False,
        verbose_name=_("coupon template"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=False,
        verbose_name=_("user"),
    )
    event = models.CharField(_("event"), max_length=16, choices=Event.choices)
    # The paid order's id, 0 for a sign-up (0, not NULL: NULLs never collide in a unique key).
    order_id = models.BigIntegerField(_("order"), default=0)
    state = models.CharField(
        _("state"), max_length=16, choices=State.choices, default=State.PENDING
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = MillisecondDateTimeField(_("next attempt at"))
    last_error = models.CharField(_("last error"), max_length=255, blank=True, default="")
    coupon_id = models.BigIntegerField(_("coupon"), null=True, blank=True)
    created_at = MillisecondDateTimeField(auto_now_add=True)
    updated_at = MillisecondDateTimeField(auto_now=True)

    class Meta:
        db_table = "coupon_auto_issue_tasks"
        verbose_name = _("automatic issue")
        verbose_name_plural = _("automatic issues")
        constraints = [
            models.UniqueConstraint(
                fields=["template", "user", "order_id"], name="auto_issue_once_per_event"
            ),
        ]
        indexes = [
            # The scheduler's queue: pending tasks by when they are due.
            models.Index(fields=["state", "next_attempt_at"], name="auto_issue_due"),
            # A refund finds the tasks of its order.
            models.Index(fields=["order_id"], name="auto_issue_order"),
        ]

    def __str__(self) -> str:
        # The admin's page title and links: words, not "paid_order:10/2".
        if not self.order_id:
            return str(self.get_event_display())
        return gettext("%(event)s, order %(order)s") % {
            "event": self.get_event_display(),
            "order": self.order_id,
        }
