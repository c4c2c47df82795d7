"""A merchant code file's rows checked (SPEC section 26) by django-import-export: every code
against the file and the database in one pass, then each row accepted or refused with its own
problem. Nothing is written here: coupons/services/merchant_codes.py inserts what is accepted."""

import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from import_export import resources

from coupons.models import CouponTemplate
from coupons.models.single_use_codes import (
    ANY_SINGLE_USE_CODE,
    SINGLE_USE_CODE_MAX_LENGTH,
    SINGLE_USE_CODE_MIN_LENGTH,
    SingleUseCode,
)
from coupons.spreadsheet_rows import cell_text

# Codes looked up in the database per query; also the resource's batch.
LOOKUP_BATCH = 5_000
_CODE = re.compile(ANY_SINGLE_USE_CODE)


def code_of_cell(value: object) -> str:
    """A cell as a code: its text, upper-cased."""
    return cell_text(value).upper()


class MerchantCodeResource(resources.ModelResource):
    """One template's codes from a file's `code` column. Every code is checked against the
    file and the database in one pass before the rows (one query per 5,000 codes), then each
    row is refused with its own problem or accepted; nothing is written here."""

    def __init__(self, *, template_id: int):
        super().__init__()
        self.template_id = template_id
        self.first_line: dict[str, int] = {}
        self.taken: set[str] = set()
        self.accepted: list[str] = []  # the good rows' codes, in the file's order

    class Meta:
        model = SingleUseCode
        fields = ("code",)
        import_id_fields = ("code",)
        force_init_instance = True  # every row is a new code; existing ones are refused
        use_bulk = True
        batch_size = LOOKUP_BATCH
        skip_diff = True
        clean_model_instances = False  # checked here, against the whole file at once

    def before_import(self, dataset, **kwargs):
        for line, value in zip(dataset["line"], dataset["code"], strict=True):
            self.first_line.setdefault(code_of_cell(value), line)
        wanted = [code for code in self.first_line if code]
        for start in range(0, len(wanted), LOOKUP_BATCH):
            chunk = wanted[start : start + LOOKUP_BATCH]
            self.taken.update(
                SingleUseCode.objects.filter(code__in=chunk).values_list("code", flat=True)
            )
            self.taken.update(
                CouponTemplate.objects.filter(code_key__in=chunk).values_list("code_key", flat=True)
            )

    def before_import_row(self, row, **kwargs):
        code = row["code"] = code_of_cell(row["code"])
        problem = self._problem(code, row["line"])
        if problem:
            raise ValidationError({"code": problem})

    def _problem(self, code: str, line: int) -> str:
        if not code:
            return _("No code.")
        if not (SINGLE_USE_CODE_MIN_LENGTH <= len(code) <= SINGLE_USE_CODE_MAX_LENGTH):
            return _("A code has %(low)d to %(high)d characters.") % {
                "low": SINGLE_USE_CODE_MIN_LENGTH,
                "high": SINGLE_USE_CODE_MAX_LENGTH,
            }
        if not _CODE.fullmatch(code):
            return _("Letters A-Z, digits and dashes inside only.")
        if self.first_line[code] != line:
            return _("Also in row %(line)d.") % {"line": self.first_line[code]}
        if code in self.taken:
            return _("This code exists already.")
        return ""

    def import_instance(self, instance, row, **kwargs):
        super().import_instance(instance, row, **kwargs)
        instance.template_id = self.template_id

    def bulk_create(self, using_transactions, dry_run, raise_errors, batch_size=None, result=None):
        """Collect instead of insert: merchant_codes_import inserts in short transactions."""
        self.accepted += [instance.code for instance in self.create_instances]
        self.create_instances.clear()
