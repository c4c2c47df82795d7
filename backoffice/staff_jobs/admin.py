"""The staff jobs' pages in the admin: the list of one's own jobs (a superuser's: everyone's)
and each job's page, which refreshes itself while the job waits or runs: its state, a
progress bar, counts, problems, the result file to download, who started it, cancel, and
after a good preview, the import."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.audit_messages import GRANT_OUTCOMES
from backoffice.coupon_admin.display import local_datetime
from backoffice.staff_actions import StaffAction, staff_may
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.running import staff_job_cancel
from core.admin_fields import ReadOnlyAdmin

# The action whose permission a job's page and file need, besides being its starter's.
ACTIONS = {
    StaffJob.Kind.CODES_PREVIEW: StaffAction.CODES_IMPORT,
    StaffJob.Kind.CODES_IMPORT: StaffAction.CODES_IMPORT,
    StaffJob.Kind.GRANT_FILE: StaffAction.COUPONS_GRANT,
    StaffJob.Kind.TEMPLATES_EXPORT: StaffAction.TEMPLATES_EXPORT,
    StaffJob.Kind.CODES_EXPORT: StaffAction.CODES_EXPORT,
    StaffJob.Kind.RECORDS_EXPORT: StaffAction.COUPONS_EXPORT,
}
COUNT_LABELS = {
    "rows": gettext_lazy("rows"),
    "good": gettext_lazy("good rows"),
    "problems": gettext_lazy("rows with problems"),
    "imported": gettext_lazy("codes imported"),
    **GRANT_OUTCOMES,
}
REFRESH_SECONDS = 2


@admin.register(StaffJob)
class StaffJobAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "state", "progress", "started_by", "started_at")
    list_filter = ("state", "kind")
    list_select_related = ("template", "started_by")
    list_per_page = 50

    def get_queryset(self, request):
        jobs = super().get_queryset(request)
        return jobs if request.user.is_superuser else jobs.filter(started_by=request.user)

    def has_module_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        return self.has_module_permission(request) and (obj is None or may_see(request, obj))

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, job: StaffJob) -> str:
        return f"{job.percent}%"

    @admin.display(description=gettext_lazy("started at"), ordering="created_at")
    def started_at(self, job: StaffJob) -> str:
        return local_datetime(job.created_at)

    def get_urls(self):
        site = self.admin_site
        return [
            path(
                "<int:job_id>/cancel/",
                site.admin_view(self.cancel_view),
                name="staff_jobs_staffjob_cancel",
            ),
            path(
                "<int:job_id>/download/",
                site.admin_view(self.download_view),
                name="staff_jobs_staffjob_download",
            ),
            *super().get_urls(),
        ]

    def _job(self, request: HttpRequest, job_id) -> StaffJob:
        job = StaffJob.objects.select_related("template", "started_by").filter(pk=job_id).first()
        if job is None or not may_see(request, job):
            raise Http404(_("No such job."))
        return job

    def change_view(self, request, object_id, form_url="", extra_context=None):
        job = self._job(request, object_id)
        counts = [(COUNT_LABELS.get(name, name), count) for name, count in job.counts.items()]
        context = {
            **self.admin_site.each_context(request),
            "title": str(job),
            "opts": StaffJob._meta,
            "job": job,
            "counts": counts,
            "more_problems": max(job.problems_count - len(job.problems), 0),
            "started_at": local_datetime(job.created_at),
            "finished_at": local_datetime(job.finished_at),
            "refresh_seconds": None if job.finished else REFRESH_SECONDS,
            "may_import": job.kind == StaffJob.Kind.CODES_PREVIEW
            and job.state == StaffJob.State.SUCCEEDED
            and job.template_id is not None
            and job.options.get("importable"),
        }
        return TemplateResponse(request, "admin/staff_jobs/staffjob/job.html", context)

    def cancel_view(self, request, job_id: int):
        job = self._job(request, job_id)
        if request.method != "POST":
            return redirect("admin:staff_jobs_staffjob_change", job.pk)
        if job.finished:
            self.message_user(request, _("The job has finished already."), messages.WARNING)
        else:
            staff_job_cancel(job)
            self.message_user(request, _("Cancel asked; the job stops at its next step."))
        return redirect("admin:staff_jobs_staffjob_change", job.pk)

    def download_view(self, request, job_id: int):
        job = self._job(request, job_id)
        if not job.result:
            raise Http404(_("This job has no file."))
        return FileResponse(job.result.open("rb"), as_attachment=True, filename=file_name(job))


def may_see(request: HttpRequest, job: StaffJob) -> bool:
    """Its starter's or a superuser's, while they may still do its action."""
    user = request.user
    mine = job.started_by_id == user.pk or user.is_superuser
    if not mine:
        return False
    if not staff_may(user, ACTIONS[StaffJob.Kind(job.kind)]):
        raise PermissionDenied
    return True


def file_name(job: StaffJob) -> str:
    return (job.result.name or "").rsplit("/", 1)[-1]
