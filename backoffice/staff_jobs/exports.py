"""Exports as staff jobs (SPEC sections 26 and 34): the template list, templates' single-use
codes and a template's claims and uses, of any size, written row by row into a file (XLSX by
openpyxl's write-only mode, CSV as Excel opens it) that the job's page offers for download.
Every text cell a spreadsheet would run as a formula is written as text (core/csv_cells.py),
in both formats. Each export is recorded with its count in the transaction that finishes the
job: the template list as one entry, codes and records per template. Rows are read on the
replica when there is one (core/read_routing.py), as the reports are."""

import csv
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.core.files import File
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from import_export import fields, resources, widgets
from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from backoffice import reports
from backoffice.coupon_admin.display import (
    catalog_names,
    issued_by_text,
    scope_text,
    terms_text,
)
from backoffice.coupon_admin.template_report import csv_lines, csv_time
from backoffice.staff_actions import StaffAction, staff_audit
from backoffice.staff_jobs.progress import JobRun
from core import clock
from core.csv_cells import csv_row
from core.read_routing import replica_reads
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode

ROWS_PER_STEP = 1_000  # rows written between two progress records (and cancel checks)
UTF8_BOM = "\ufeff"  # Excel opens the CSV as UTF-8 (names in Chinese)


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
    scope = fields.Field(column_name=gettext_lazy("scope"))
    issued_by = fields.Field(column_name=gettext_lazy("issued by"))
    campaign = fields.Field(attribute="campaign__name", column_name=gettext_lazy("campaign"))
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
            *("id", "name", "terms", "scope", "issued_by", "campaign", "total", "claimed", "used"),
            *("valid_from", "valid_until", "codes_only", "paused"),
        )
        export_order = fields

    def __init__(self, *, names: dict[str, dict[int, str]] | None = None) -> None:
        """`names`: the catalog's names of what the exported templates name (one lookup for
        the whole export, display.catalog_names)."""
        super().__init__()
        self.names = names

    def dehydrate_terms(self, template) -> str:
        return terms_text(template)

    def dehydrate_scope(self, template) -> str:
        return scope_text(template, self.names)

    def dehydrate_issued_by(self, template) -> str:
        return issued_by_text(template)

    def dehydrate_valid_from(self, template) -> str:
        return csv_time(template.valid_from)

    def dehydrate_valid_until(self, template) -> str:
        return csv_time(template.valid_until)

    def dehydrate_codes_only(self, template) -> str:
        return _("yes") if template.has_single_use_codes else _("no")

    def dehydrate_paused(self, template) -> str:
        return csv_time(template.paused_at)


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
        return csv_time(code.used_at)

    def dehydrate_created_at(self, code) -> str:
        return csv_time(code.created_at)


def _xlsx_cell(value: object) -> object:
    """openpyxl refuses control characters in text: each is replaced (U+FFFD)."""
    return ILLEGAL_CHARACTERS_RE.sub("\ufffd", value) if isinstance(value, str) else value


def _write(run: JobRun, kind: str, name: str, headers: list[str], rows: Iterable[list]) -> int:
    """Write the rows into the job's result file as `kind` (xlsx or csv), recording progress;
    returns how many rows."""
    count = 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.{kind}"
        if kind == "xlsx":
            workbook = Workbook(write_only=True)
            sheet = workbook.create_sheet()
            sheet.append(headers)
            for count, row in enumerate(rows, 1):
                sheet.append([_xlsx_cell(cell) for cell in csv_row(row)])
                if count % ROWS_PER_STEP == 0:
                    run.advance(count)
            workbook.save(path)
        else:
            with path.open("w", encoding="utf-8", newline="") as out:
                writer = csv.writer(out)
                out.write(UTF8_BOM)
                writer.writerow(csv_row(list(headers)))
                for count, row in enumerate(rows, 1):
                    writer.writerow(csv_row(row))
                    if count % ROWS_PER_STEP == 0:
                        run.advance(count)
        with path.open("rb") as written:
            run.job.result.save(path.name, File(written), save=False)
    return count


def _exported(count: int) -> str:
    return ngettext("%(count)d row exported.", "%(count)d rows exported.", count) % {"count": count}


def _resource_rows(resource: resources.ModelResource, objects: Iterable) -> Iterator[list]:
    for instance in objects:
        yield resource.export_resource(instance)


def templates_export(run: JobRun) -> None:
    """The chosen templates with their funnel, as the list shows them; one audit entry."""
    job = run.job
    kind = job.options.get("format", "xlsx")
    audit = staff_audit(job.started_by, StaffAction.TEMPLATES_EXPORT)
    audit.check()
    chosen = (
        reports.templates_with_funnel(now=clock.now())
        .filter(pk__in=job.template_ids)
        .select_related("campaign")
    )
    run.advance(0, total=chosen.count())
    resource = TemplateListResource(names=catalog_names(chosen))
    headers = resource.get_export_headers()
    with replica_reads():
        count = _write(run, kind, "coupon-templates", headers, _resource_rows(resource, chosen))
    with transaction.atomic():
        audit.record(CouponTemplate, {"count": count, "format": kind.upper()})
        run.finish(_exported(count), done=count, counts={"rows": count}, result=job.result.name)


def _codes_of(template_ids: list[int]) -> Iterator[SingleUseCode]:
    """The templates' codes, each template's in the order made, read ROWS_PER_STEP at a time
    by their key (a million codes never sit in memory at once)."""
    for template_id in template_ids:
        last_id = 0
        while True:
            batch = list(
                SingleUseCode.objects.filter(template_id=template_id, pk__gt=last_id)
                .select_related("template", "used_by")
                .order_by("pk")[:ROWS_PER_STEP]
            )
            if not batch:
                break
            yield from batch
            last_id = batch[-1].pk


def codes_export(run: JobRun) -> None:
    """The codes of the chosen templates in one sheet, recorded per template."""
    job = run.job
    audit = staff_audit(job.started_by, StaffAction.CODES_EXPORT)
    audit.check()
    kind = job.options.get("format", "xlsx")
    run.advance(0, total=SingleUseCode.objects.filter(template_id__in=job.template_ids).count())
    resource = SingleUseCodeResource()
    headers = resource.get_export_headers()
    rows = _resource_rows(resource, _codes_of(sorted(job.template_ids)))
    with replica_reads():
        count = _write(run, kind, "single-use-codes", headers, rows)
    with transaction.atomic():
        for template in CouponTemplate.objects.filter(pk__in=job.template_ids):
            held = SingleUseCode.objects.filter(template_id=template.pk).count()
            audit.record(template, {"count": held, "format": kind.upper()})
        run.finish(_exported(count), done=count, counts={"rows": count}, result=job.result.name)


def records_export(run: JobRun) -> None:
    """Every coupon of the template with its orders, as CSV (template_report.csv_lines)."""
    job = run.job
    template = job.template
    assert template is not None
    audit = staff_audit(job.started_by, StaffAction.COUPONS_EXPORT)
    audit.check()
    run.advance(0, total=UserCoupon.objects.filter(template_id=template.pk).count())
    lines = csv_lines(template, now=clock.now())
    count = 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"coupon-{template.pk}.csv"
        with path.open("w", encoding="utf-8", newline="") as out:
            out.write(next(lines))  # the BOM and the headers
            for count, line in enumerate(lines, 1):
                out.write(line)
                if count % ROWS_PER_STEP == 0:
                    run.advance(count)
        with path.open("rb") as written:
            job.result.save(path.name, File(written), save=False)
    with transaction.atomic():
        audit.record(template, {"count": count})
        run.finish(_exported(count), done=count, counts={"rows": count}, result=job.result.name)
