"""Merchant codes in (SPEC section 26): single-use codes a merchant supplies in a CSV or XLSX
file, read and checked row by row by django-import-export, and added to a template all or
nothing. A preview runs the same checks and says what each row would do; the import, when
every row is good and the codes fit the remaining total, inserts them as generated codes are
inserted (coupons/services/codes.py)."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

import tablib
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from core.staff_audit import NOT_STAFF, StaffAudit
from coupons.errors import CodesFileInvalid, TemplateNotFound
from coupons.merchant_code_rows import MerchantCodeResource, code_of_cell
from coupons.models import CouponTemplate
from coupons.models.single_use_codes import MAX_SINGLE_USE_CODES_PER_REQUEST, SingleUseCode
from coupons.services.codes import (
    CODES_PER_INSERT,
    codes_only_set,
    codes_remaining,
    delete_unused,
    one_creation_at_a_time,
)
from coupons.spreadsheet_rows import (
    CELL_MAX_CHARACTERS,
    SpreadsheetTooLarge,
    csv_rows,
    xlsx_rows,
)

# The column that holds the codes, as its header may name it.
CODE_HEADERS = ("code", "codes", "券码", "优惠码", "兑换码")
# A refusal lists this many rows' problems, then how many more there are.
PROBLEMS_SHOWN = 50


@dataclass(frozen=True)
class RowProblem:
    line: int  # the file's line or spreadsheet row (the header is 1)
    code: str
    problem: str

    def __str__(self) -> str:
        return _("Row %(line)d (%(code)s): %(problem)s") % {
            "line": self.line,
            "code": self.code or "–",
            "problem": self.problem,
        }


@dataclass(frozen=True)
class CodesCheck:
    """What importing a file would do: how many codes it adds, each bad row's problem, and
    whether they fit the template's remaining total."""

    good: int
    problems: list[RowProblem]
    over_remaining: str = ""

    @property
    def importable(self) -> bool:
        return self.good > 0 and not self.problems and not self.over_remaining

    def messages(self) -> list[str]:
        shown = [str(problem) for problem in self.problems[:PROBLEMS_SHOWN]]
        if len(self.problems) > PROBLEMS_SHOWN:
            more = len(self.problems) - PROBLEMS_SHOWN
            shown.append(_("… and %(count)d more rows with problems.") % {"count": more})
        if self.over_remaining:
            shown.append(self.over_remaining)
        if self.good == 0 and not self.problems:
            shown.append(_("The file holds no codes."))
        return shown


def merchant_codes_read(*, name: str, content: bytes) -> tablib.Dataset:
    """The file's rows as `line` (the file's line or the sheet's row) and `code`; blank rows
    are left out, so every row named later is the one the merchant sees. The file is streamed
    and what it expands to is bounded (coupons/spreadsheet_rows.py). CodesFileInvalid naming
    `file` for another format, a file too large (as sent or unzipped), one that cannot be
    read, one whose first row does not name the codes' column, and at the first row past a
    bound (too many rows, cells or codes, or a cell too long)."""
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if extension not in ("csv", "xlsx"):
        raise CodesFileInvalid(fields={"file": [_("A .csv or .xlsx file is required.")]})
    # A staff file (SPEC section 34: up to 8 MiB, 100,000 codes of 21 characters as CSV); the
    # API's file is a request body, bounded before it gets here (SPEC section 12: 1 MiB).
    if len(content) > settings.STAFF_FILE_MAX_BYTES:
        limit = settings.STAFF_FILE_MAX_BYTES
        raise CodesFileInvalid(fields={"file": [_("At most %(bytes)d bytes.") % {"bytes": limit}]})
    try:
        return _codes_of(csv_rows(content) if extension == "csv" else xlsx_rows(content))
    except CodesFileInvalid:
        raise
    except SpreadsheetTooLarge as refused:
        _refuse(str(refused))
    except Exception as error:  # any reader's error: the file is not what its name says
        message = _("The file cannot be read as %(format)s.") % {"format": extension}
        raise CodesFileInvalid(fields={"file": [message]}) from error


def _codes_of(rows: Iterable[Sequence]) -> tablib.Dataset:
    """The codes' column of `rows` (the first names it), each non-blank row with its line."""
    lines = iter(rows)
    headers = [str(cell or "").strip().lower() for cell in next(lines)]
    column = next((i for i, header in enumerate(headers) if header in CODE_HEADERS), None)
    if column is None:
        message = _("The first row must name the codes' column: %(names)s.")
        raise CodesFileInvalid(fields={"file": [message % {"names": ", ".join(CODE_HEADERS)}]})
    codes = tablib.Dataset(headers=["line", "code"])
    for line, row in enumerate(lines, 2):
        if not any(cell not in (None, "") for cell in row):
            continue
        if any(isinstance(cell, str) and len(cell) > CELL_MAX_CHARACTERS for cell in row):
            message = _("Row %(line)d: a cell is longer than %(count)d characters.")
            _refuse(message % {"line": line, "count": CELL_MAX_CHARACTERS})
        if len(codes) == MAX_SINGLE_USE_CODES_PER_REQUEST:
            _refuse(
                _("At most %(count)d codes in one file.")
                % {"count": MAX_SINGLE_USE_CODES_PER_REQUEST}
            )
        codes.append([line, row[column] if column < len(row) else None])
    return codes


def _refuse(message: str) -> NoReturn:
    raise CodesFileInvalid(fields={"file": [message]})


def merchant_codes_check(*, template_id: int, dataset: tablib.Dataset) -> CodesCheck:
    """The preview: every row checked as the import checks it; nothing is written."""
    template = CouponTemplate.objects.filter(pk=template_id).first()
    if template is None:
        raise TemplateNotFound()
    return _checked(template, dataset)[0]


def merchant_codes_import(
    *,
    template_id: int,
    dataset: tablib.Dataset,
    file_name: str,
    audit: StaffAudit = NOT_STAFF,
    codes_only: bool = False,
    inserted_before: int = 0,
    on_inserted: Callable[[int], None] | None = None,
    on_imported: Callable[[int], None] | None = None,
) -> int:
    """Add every code of `dataset` to the template as a single-use code and return how many;
    or, if any row is bad (not a code, twice in the file, a code that exists already, as a
    single-use code or a template's shared code) or the codes pass the remaining total (total
    - claimed - unused codes), import nothing and raise CodesFileInvalid naming each problem
    under `file`. `codes_only` as for created codes; the door's `audit` asks coupons.manage_codes
    and records it with the count, the file's name and the choice.

    As generated codes are (decision 0610): one import or creation of a template at a time,
    the codes inserted in short transactions (no claim waits for a whole file), then, under
    the template's row lock, the total checked again and the import recorded; on any failure
    the codes this call inserted are deleted again.

    Run as a staff job (backoffice/staff_jobs/): `on_inserted(count)` is called inside each
    batch's transaction with the codes inserted so far, `on_imported(count)` inside the last
    one, so a job's progress commits with what it counts; a run of the same import whose
    process was killed after `inserted_before` codes (the first of the file, its own) has
    them taken back first, under the lock, and the file imported whole again."""
    audit.check()
    with one_creation_at_a_time(template_id):
        if inserted_before:
            delete_unused(_file_codes(dataset)[:inserted_before])
        template = CouponTemplate.objects.filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        check, codes = _checked(template, dataset)
        if not check.importable:
            raise CodesFileInvalid(fields={"file": check.messages()})
        inserted: list[str] = []
        try:
            for start in range(0, len(codes), CODES_PER_INSERT):
                batch = codes[start : start + CODES_PER_INSERT]
                _insert(template_id, batch, inserted=len(inserted), on_inserted=on_inserted)
                inserted += batch
            _imported(
                template_id,
                count=len(codes),
                file_name=file_name,
                audit=audit,
                codes_only=codes_only,
                on_imported=on_imported,
            )
        except BaseException:
            delete_unused(inserted)
            raise
    return len(codes)


def _file_codes(dataset: tablib.Dataset) -> list[str]:
    """The file's codes in its order, each once: what an import of it inserts, in that order."""
    return list(dict.fromkeys(code_of_cell(value) for value in dataset["code"]))


def _insert(
    template_id: int,
    codes: list[str],
    *,
    inserted: int,
    on_inserted: Callable[[int], None] | None,
) -> None:
    try:
        with transaction.atomic():
            SingleUseCode.objects.bulk_create(
                [SingleUseCode(template_id=template_id, code=code) for code in codes]
            )
            if on_inserted is not None:
                on_inserted(inserted + len(codes))
    except IntegrityError as error:  # a code taken since the check (another import, a draw)
        message = _("A code of the file was added elsewhere meanwhile; check the file again.")
        raise CodesFileInvalid(fields={"file": [message]}) from error


def _imported(
    template_id: int,
    *,
    count: int,
    file_name: str,
    audit: StaffAudit,
    codes_only: bool,
    on_imported: Callable[[int], None] | None,
) -> None:
    """The import's last, short transaction, under the template's row lock: the total again
    (claims may have come in meanwhile), codes-only if so chosen, the record."""
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:  # deleted meanwhile: its codes went with it
            raise TemplateNotFound()
        remaining, _unused = codes_remaining(template)
        if remaining < 0:
            message = _("Coupons were claimed meanwhile: the codes no longer fit the total.")
            raise CodesFileInvalid(fields={"file": [message]})
        if codes_only:
            codes_only_set(template)
        audit.record(
            template,
            {
                "count": count,
                "file": file_name[:100],
                "codes_only": template.has_single_use_codes,
            },
        )
        if on_imported is not None:
            on_imported(count)


def _checked(template: CouponTemplate, dataset: tablib.Dataset) -> tuple[CodesCheck, list[str]]:
    """Every row run through the resource, which checks and collects without writing: what
    an import would do, and the codes it would insert."""
    remaining, unused = codes_remaining(template)
    resource = MerchantCodeResource(template_id=template.pk)
    result = resource.import_data(dataset, dry_run=True, use_transactions=True)
    if result.has_errors():  # not a row's fault but the database's: raised as it is
        errors = result.base_errors or [
            error for _row, row_errors in result.row_errors() for error in row_errors
        ]
        raise errors[0].error
    problems = [
        RowProblem(
            line=dataset[row.number - 1][0],
            code=code_of_cell(dataset[row.number - 1][1]),
            problem="; ".join(
                message for messages in row.error_dict.values() for message in messages
            ),
        )
        for row in result.invalid_rows
    ]
    good = len(resource.accepted)
    over = ""
    if good > remaining:
        over = _(
            "These %(count)d codes pass the remaining total: at most %(remaining)d more (the "
            "total is %(total)d, %(claimed)d claimed and %(unused)d unused codes already out)."
        ) % {
            "count": good,
            "remaining": max(remaining, 0),
            "total": template.total,
            "claimed": template.claimed_count,
            "unused": unused,
        }
    return CodesCheck(good=good, problems=problems, over_remaining=over), resource.accepted
