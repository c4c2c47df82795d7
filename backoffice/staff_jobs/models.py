"""A staff member's long work, as the worker runs it and the admin page shows it."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from coupons.models import CouponTemplate


class StaffJob(models.Model):
    class Kind(models.TextChoices):
        CODES_PREVIEW = "codes_preview", _("Merchant codes preview")
        CODES_IMPORT = "codes_import", _("Merchant codes import")
        GRANT_FILE = "grant_file", _("Grant to the users of a file")
        TEMPLATES_EXPORT = "templates_export", _("Templates export")
        CODES_EXPORT = "codes_export", _("Single-use codes export")
        RECORDS_EXPORT = "records_export", _("Claims and uses export")

    class State(models.TextChoices):
        QUEUED = "queued", pgettext_lazy("staff job", "Waiting for a worker")
        RUNNING = "running", pgettext_lazy("staff job", "Running")
        SUCCEEDED = "succeeded", pgettext_lazy("staff job", "Done")
        FAILED = "failed", pgettext_lazy("staff job", "Failed")
        CANCELLED = "cancelled", pgettext_lazy("staff job", "Cancelled")

    FINISHED = (State.SUCCEEDED, State.FAILED, State.CANCELLED)

    kind = models.CharField(_("work"), max_length=20, choices=Kind.choices)
    state = models.CharField(_("state"), max_length=10, choices=State.choices, default=State.QUEUED)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("started by"),
        on_delete=models.PROTECT,
        related_name="+",
    )
    template = models.ForeignKey(
        CouponTemplate,
        verbose_name=_("coupon template"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The templates an export covers (a list action's selection).
    template_ids = models.JSONField(default=list, blank=True)
    # "kind:template" while an import or grant is waiting or running, then NULL: a second one
    # on the same template is refused by this unique index, at once (409), never left to wait.
    one_at_a_time = models.CharField(max_length=40, null=True, unique=True, editable=False)
    # The choices made when it was started: reason, codes only, format, language.
    options = models.JSONField(default=dict, blank=True)
    upload = models.FileField(_("file sent"), upload_to="staff-jobs/in/%Y/%m/", blank=True)
    upload_name = models.CharField(_("file name"), max_length=200, blank=True)
    result = models.FileField(_("result file"), upload_to="staff-jobs/out/%Y/%m/", blank=True)
    total = models.PositiveIntegerField(_("to do"), default=0)
    done = models.PositiveIntegerField(_("done"), default=0)
    counts = models.JSONField(_("counts"), default=dict, blank=True)
    problems = models.JSONField(_("problems"), default=list, blank=True)
    problems_count = models.PositiveIntegerField(default=0)
    outcome = models.TextField(_("outcome"), blank=True)
    # Each run of the job by a worker (a killed worker's job is run again) takes the next
    # number; a run whose number is no longer the job's writes nothing more.
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    # The admin log entries the job's own audit wrote, continued by its next run.
    audit_entries = models.JSONField(default=list, blank=True, editable=False)
    cancel_requested = models.BooleanField(_("cancel requested"), default=False)
    created_at = models.DateTimeField(_("started at"), auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("staff job")
        verbose_name_plural = _("staff jobs")
        ordering = ["-pk"]
        indexes = [models.Index(fields=["state", "heartbeat_at"], name="staff_job_state")]

    def __str__(self) -> str:
        subject = f" · {self.template.name}" if self.template else ""
        return f"#{self.pk} {self.get_kind_display()}{subject}"

    @property
    def finished(self) -> bool:
        return self.state in self.FINISHED

    @property
    def percent(self) -> int:
        if self.state == self.State.SUCCEEDED:
            return 100
        return min(100, self.done * 100 // self.total) if self.total else 0
