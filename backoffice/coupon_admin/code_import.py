"""The template's "import merchant codes" page (SPEC sections 26 and 34): upload a CSV or
XLSX and a worker previews it (what each row would do: django-import-export's dry run,
coupons/services/merchant_codes.py) on the job's page, which offers the import once the file
is good; the import, another job on the same file, checks every row again and imports all or
nothing. One import of a template at a time: a second is refused at once. Needs
coupons.manage_codes, like generating codes."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.coupon_admin.template_pages import REACH_CHOICES, TemplatePagesAdmin
from backoffice.staff_jobs.errors import StaffJobBusy
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.starting import staff_job_start
from core.limits import is_id_text

RECENT_JOBS = 5


class CodesFileForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("file of codes"),
        help_text=gettext_lazy(
            "CSV (UTF-8 or as Excel saves it) or XLSX, at most 100,000 codes. The first row "
            "names the codes' column: code or 券码. A code has 8 to 21 letters A-Z, digits and "
            "dashes inside; case does not matter."
        ),
    )
    reach = forms.ChoiceField(
        label=gettext_lazy("after these codes"), widget=forms.RadioSelect, choices=REACH_CHOICES
    )


class CodeImportAdmin(TemplatePagesAdmin):
    """The import page of CouponTemplateAdmin (backoffice/coupon_admin/templates.py), which
    builds on this, beside the template's other pages."""

    def get_urls(self):
        return [
            path(
                "<path:object_id>/codes/import/",
                self.admin_site.admin_view(self.codes_import_view),
                name="coupons_coupontemplate_codes_import",
            ),
            *super().get_urls(),
        ]

    def codes_import_view(self, request, object_id: str):
        template = self.page_template(request, object_id)
        if not self.has_manage_codes_permission(request):
            raise PermissionDenied
        if request.method == "POST" and "preview" in request.POST:
            return self._import_previewed(request, template)
        form = CodesFileForm(request.POST or None, request.FILES or None)
        if template.has_single_use_codes:
            form.fields["reach"].required = False
            form.fields["reach"].widget = forms.HiddenInput()
        if form.is_valid():
            codes_only = form.cleaned_data["reach"] == "codes_only"
            return self._started(
                request,
                template,
                kind=StaffJob.Kind.CODES_PREVIEW,
                options={"codes_only": codes_only},
                upload=form.cleaned_data["file"],
            )
        context = self.page_context(request, template, _("Import merchant codes"))
        context.update(form=form, jobs=_recent_jobs(request, template))
        return TemplateResponse(request, "admin/coupons/coupontemplate/codes_import.html", context)

    def _import_previewed(self, request, template):
        """The import of a file its preview found good, by the staff member who previewed it."""
        preview = StaffJob.objects.filter(
            pk=request.POST["preview"] if is_id_text(request.POST["preview"]) else None,
            kind=StaffJob.Kind.CODES_PREVIEW,
            template=template,
            started_by=request.user,
            state=StaffJob.State.SUCCEEDED,
        ).first()
        if preview is None or not preview.options.get("importable"):
            self.message_user(request, _("Preview the file first."), messages.ERROR)
            return redirect("admin:coupons_coupontemplate_codes_import", template.pk)
        options = {"codes_only": bool(preview.options.get("codes_only"))}
        kind = StaffJob.Kind.CODES_IMPORT
        return self._started(request, template, kind=kind, options=options, upload_of=preview)

    def _started(self, request, template, **job):
        try:
            started = staff_job_start(started_by=request.user, template=template, **job)
        except StaffJobBusy as busy:
            self.message_user(request, str(busy.detail), messages.ERROR)
            return redirect("admin:coupons_coupontemplate_codes_import", template.pk)
        return redirect("admin:staff_jobs_staffjob_change", started.pk)


def _recent_jobs(request, template) -> list[StaffJob]:
    """The staff member's last imports and previews of this template, newest first."""
    kinds = (StaffJob.Kind.CODES_PREVIEW, StaffJob.Kind.CODES_IMPORT)
    mine = StaffJob.objects.filter(template=template, kind__in=kinds, started_by=request.user)
    return list(mine[:RECENT_JOBS])
