"""The template's "import merchant codes" page (SPEC section 26): upload a CSV or XLSX, see
what each row would do (django-import-export's dry run, coupons/services/merchant_codes.py),
then confirm. The file waits between the two steps in the cache, under a random name bound to
the staff member and the template; the confirmation imports it all or nothing and checks
every row again. Needs coupons.manage_codes, like generating codes."""

import secrets

from django import forms
from django.contrib import messages
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice.coupon_admin.template_pages import REACH_CHOICES, TemplatePagesAdmin
from backoffice.staff_actions import StaffAction, staff_audit
from core.domain_errors import DomainError
from coupons.errors import CodesFileInvalid
from coupons.services import merchant_codes

# An upload waits this long for its confirmation.
UPLOAD_KEPT_SECONDS = 3600


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


class CodesConfirmForm(forms.Form):
    upload = forms.CharField(widget=forms.HiddenInput)
    reach = forms.CharField(widget=forms.HiddenInput)


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
        context = self.page_context(request, template, _("Import merchant codes"))
        if request.method == "POST" and "upload" in request.POST:
            return self._confirm(request, template, context)
        form = CodesFileForm(request.POST or None, request.FILES or None)
        if template.has_single_use_codes:
            form.fields["reach"].required = False
            form.fields["reach"].widget = forms.HiddenInput()
        check = None
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                content = upload.read()
                dataset = merchant_codes.merchant_codes_read(name=upload.name, content=content)
                check = merchant_codes.merchant_codes_check(
                    template_id=template.pk, dataset=dataset
                )
            except CodesFileInvalid as error:
                form.add_error("file", (error.fields or {}).get("file", [str(error.detail)]))
            else:
                if check.importable:
                    context["confirm"] = CodesConfirmForm(
                        initial={
                            "upload": _keep(request, template.pk, upload.name, content),
                            "reach": form.cleaned_data["reach"] or "keep",
                        }
                    )
        context.update(form=form, check=check)
        return TemplateResponse(request, "admin/coupons/coupontemplate/codes_import.html", context)

    def _confirm(self, request, template, context):
        confirm = CodesConfirmForm(request.POST)
        kept = cache.get(_key(request, template.pk, confirm.data.get("upload", "")))
        if not confirm.is_valid() or kept is None:
            self.message_user(
                request, _("The upload has expired; choose the file again."), messages.ERROR
            )
            return redirect("admin:coupons_coupontemplate_codes_import", template.pk)
        name, content = kept
        try:
            imported = merchant_codes.merchant_codes_import(
                template_id=template.pk,
                dataset=merchant_codes.merchant_codes_read(name=name, content=content),
                file_name=name,
                codes_only=confirm.cleaned_data["reach"] == "codes_only",
                audit=staff_audit(request.user, StaffAction.CODES_IMPORT),
            )
        except CodesFileInvalid as error:  # something changed since the preview
            for problem in (error.fields or {}).get("file", [str(error.detail)]):
                self.message_user(request, problem, messages.ERROR)
            return redirect("admin:coupons_coupontemplate_codes_import", template.pk)
        except DomainError as error:  # another creation running, the template gone
            self.message_user(request, str(error.detail), messages.ERROR)
            return redirect("admin:coupons_coupontemplate_changelist")
        cache.delete(_key(request, template.pk, confirm.cleaned_data["upload"]))
        self.message_user(
            request,
            ngettext(
                "%(count)d merchant code imported.", "%(count)d merchant codes imported.", imported
            )
            % {"count": imported},
            messages.SUCCESS,
        )
        return redirect("admin:coupons_coupontemplate_change", template.pk)


def _keep(request, template_id: int, name: str, content: bytes) -> str:
    upload = secrets.token_urlsafe(16)
    cache.set(_key(request, template_id, upload), (name, content), UPLOAD_KEPT_SECONDS)
    return upload


def _key(request, template_id: int, upload: str) -> str:
    """Only the staff member who uploaded, on this template's page, finds the file again."""
    return f"merchant-codes:{request.user.pk}:{template_id}:{upload}"
