"""Spreadsheets out (SPEC section 26): the template list and templates' single-use codes as
XLSX or CSV, built by django-import-export's resources and formats. Every text cell that a
spreadsheet would run as a formula is written as text (core/csv_cells.py), in both formats:
XLSX would store "=..." as a formula too. Each download is recorded: the template list as one
entry, codes per template (as the codes' CSV is)."""

import tablib
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from import_export import fields, resources, widgets
from import_export.formats.base_formats import CSV, XLSX, TablibFormat

from backoffice import reports
from backoffice.action_buttons import ButtonLook, looks
from backoffice.coupon_admin.display import local_datetime, terms_text
from backoffice.staff_actions import StaffAction, staff_audit
from core import clock
from core.csv_cells import csv_row
from coupons.models import CouponTemplate
from coupons.single_use_codes import SingleUseCode

FORMATS: dict[str, type[TablibFormat]] = {"xlsx": XLSX, "csv": CSV}


class TranslatedHeaders(resources.ModelResource):
    """Column names in the language of the request that exports."""

    def get_export_headers(self, selected_fields=None):
        return [str(header) for header in super().get_export_headers(selected_fields)]


def number() -> widgets.IntegerWidget:
    """A count or an id written as a number, which a spreadsheet sums (the default widget
    wrote it as text)."""
    return widgets.IntegerWidget(coerce_to_string=False)


class TemplateListResource(TranslatedHeaders):
    id = fields.Field(attribute="id", column_name="ID", widget=number())
    name = fields.Field(attribute="name", column_name=gettext_lazy("name"))
    terms = fields.Field(column_name=gettext_lazy("terms"))
    total = fields.Field(
        attribute="total", column_name=gettext_lazy("issue total"), widget=number()
    )
    claimed = fields.Field(
        attribute="claimed_count", column_name=gettext_lazy("claimed"), widget=number()
    )
    used = fields.Field(attribute="used_count", column_name=gettext_lazy("used"), widget=number())
    valid_from = fields.Field(column_name=gettext_lazy("valid from"))
    valid_until = fields.Field(column_name=gettext_lazy("valid until"))
    codes_only = fields.Field(column_name=gettext_lazy("codes only"))
    paused = fields.Field(column_name=gettext_lazy("paused since"))

    class Meta:
        model = CouponTemplate
        fields = (
            *("id", "name", "terms", "total", "claimed", "used"),
            *("valid_from", "valid_until", "codes_only", "paused"),
        )
        export_order = fields

    def dehydrate_terms(self, template) -> str:
        return terms_text(template)

    def dehydrate_valid_from(self, template) -> str:
        return local_datetime(template.valid_from)

    def dehydrate_valid_until(self, template) -> str:
        return local_datetime(template.valid_until)

    def dehydrate_codes_only(self, template) -> str:
        return _("yes") if template.has_single_use_codes else _("no")

    def dehydrate_paused(self, template) -> str:
        return local_datetime(template.paused_at)


class SingleUseCodeResource(TranslatedHeaders):
    template_id = fields.Field(
        attribute="template_id", column_name=gettext_lazy("template id"), widget=number()
    )
    template = fields.Field(attribute="template__name", column_name=gettext_lazy("template"))
    code = fields.Field(attribute="code", column_name=gettext_lazy("code"))
    used_by = fields.Field(column_name=gettext_lazy("used by"))
    used_at = fields.Field(column_name=gettext_lazy("used at"))
    created_at = fields.Field(column_name=gettext_lazy("created at"))

    class Meta:
        model = SingleUseCode
        fields = ("template_id", "template", "code", "used_by", "used_at", "created_at")
        export_order = fields

    def dehydrate_used_by(self, code) -> str:
        return code.used_by.get_username() if code.used_by else ""

    def dehydrate_used_at(self, code) -> str:
        return local_datetime(code.used_at)

    def dehydrate_created_at(self, code) -> str:
        return local_datetime(code.created_at)


def spreadsheet_response(dataset: tablib.Dataset, kind: str, name: str) -> HttpResponse:
    """The dataset as a download in `kind` (xlsx or csv), every text cell kept as text."""
    safe = tablib.Dataset(headers=dataset.headers)
    for row in dataset:
        safe.append(csv_row(list(row)))
    file_format = FORMATS[kind]()
    body = file_format.export_data(safe)
    if kind == "csv":
        body = "\ufeff" + body  # Excel opens it as UTF-8 (names in Chinese)
    response = HttpResponse(body, content_type=file_format.get_content_type())
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response


def export_templates(request, queryset: QuerySet[CouponTemplate], kind: str) -> HttpResponse:
    """The selected templates with their funnel, as the list shows them; one audit entry."""
    audit = staff_audit(request.user, StaffAction.TEMPLATES_EXPORT)
    audit.check()
    chosen = reports.templates_with_funnel(now=clock.now()).filter(pk__in=queryset.values("pk"))
    dataset = TemplateListResource().export(chosen)
    audit.record(CouponTemplate, {"count": len(dataset), "format": kind.upper()})
    return spreadsheet_response(dataset, kind, "coupon-templates")


@admin.action(description=gettext_lazy("Export templates (XLSX)"), permissions=["export_templates"])
@looks(ButtonLook.DOWNLOAD)
def export_templates_xlsx(modeladmin, request, queryset) -> HttpResponse:
    return export_templates(request, queryset, "xlsx")


@admin.action(description=gettext_lazy("Export templates (CSV)"), permissions=["export_templates"])
@looks(ButtonLook.DOWNLOAD)
def export_templates_csv(modeladmin, request, queryset) -> HttpResponse:
    return export_templates(request, queryset, "csv")


@admin.action(
    description=gettext_lazy("Export single-use codes (XLSX)"), permissions=["export_codes"]
)
@looks(ButtonLook.DOWNLOAD)
def export_single_use_codes_xlsx(modeladmin, request, queryset) -> HttpResponse:
    """The codes of the selected templates in one sheet, recorded per template."""
    audit = staff_audit(request.user, StaffAction.CODES_EXPORT)
    audit.check()
    template_ids = sorted(queryset.values_list("pk", flat=True))
    codes = (
        SingleUseCode.objects.filter(template_id__in=template_ids)
        .select_related("template", "used_by")
        .order_by("template_id", "pk")
    )
    dataset = SingleUseCodeResource().export(codes)
    for template in CouponTemplate.objects.filter(pk__in=template_ids):
        count = SingleUseCode.objects.filter(template_id=template.pk).count()
        audit.record(template, {"count": count, "format": "XLSX"})
    return spreadsheet_response(dataset, "xlsx", "single-use-codes")
