"""Spreadsheets out (SPEC sections 26 and 34): the list actions that export the selected
templates (XLSX or CSV) and their single-use codes (XLSX). Each starts a staff job that a
worker writes (backoffice/staff_jobs/exports.py) and goes to its page, where the file is
offered once written: an export of any size never holds a page."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext_lazy

from backoffice.action_buttons import ButtonLook, looks
from backoffice.staff_actions import StaffAction, staff_audit
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.starting import staff_job_start
from coupons.models import CouponTemplate


def export_started(
    request, queryset: QuerySet[CouponTemplate], kind: StaffJob.Kind, action: StaffAction, **options
) -> HttpResponse:
    staff_audit(request.user, action).check()
    job = staff_job_start(
        kind=kind,
        started_by=request.user,
        template_ids=sorted(queryset.values_list("pk", flat=True)),
        options=options,
    )
    return HttpResponseRedirect(reverse("admin:staff_jobs_staffjob_change", args=[job.pk]))


@admin.action(description=gettext_lazy("Export templates (XLSX)"), permissions=["export_templates"])
@looks(ButtonLook.DOWNLOAD)
def export_templates_xlsx(modeladmin, request, queryset) -> HttpResponse:
    kind, action = StaffJob.Kind.TEMPLATES_EXPORT, StaffAction.TEMPLATES_EXPORT
    return export_started(request, queryset, kind, action, format="xlsx")


@admin.action(description=gettext_lazy("Export templates (CSV)"), permissions=["export_templates"])
@looks(ButtonLook.DOWNLOAD)
def export_templates_csv(modeladmin, request, queryset) -> HttpResponse:
    kind, action = StaffJob.Kind.TEMPLATES_EXPORT, StaffAction.TEMPLATES_EXPORT
    return export_started(request, queryset, kind, action, format="csv")


@admin.action(
    description=gettext_lazy("Export single-use codes (XLSX)"), permissions=["export_codes"]
)
@looks(ButtonLook.DOWNLOAD)
def export_single_use_codes_xlsx(modeladmin, request, queryset) -> HttpResponse:
    kind, action = StaffJob.Kind.CODES_EXPORT, StaffAction.CODES_EXPORT
    return export_started(request, queryset, kind, action, format="xlsx")
