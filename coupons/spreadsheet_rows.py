"""A spreadsheet's rows, read as a merchant's file is read (coupons/services/merchant_codes.py):
a CSV decoded whole (it is a request body, at most 1 MiB), an .xlsx streamed within bounds on
what it may expand to, checked before it is parsed and while its rows are read. Each refusal
is SpreadsheetTooLarge, whose message names the row where it was found."""

import csv
import io
import zipfile
from collections.abc import Iterator
from typing import NoReturn

import openpyxl
from django.utils.translation import gettext as _

from coupons.models.single_use_codes import MAX_SINGLE_USE_CODES_PER_REQUEST

# What a file may expand to. An .xlsx is a zip: a 1.6 KB one claimed 2,000 x 16,384 cells, a
# 196 KB one unzipped to 200 M characters of shared strings, a 176 KB one held 20 M blank
# rows. So its parts are bounded before it is read (the sizes its zip declares, which the
# unzipping never reads past), and its rows and cells while it is streamed.
XLSX_MAX_UNZIPPED_BYTES = 32 * 1024 * 1024
XLSX_MAX_SHARED_STRINGS_BYTES = 8 * 1024 * 1024
XLSX_MAX_ROWS = 2 * MAX_SINGLE_USE_CODES_PER_REQUEST  # blank ones too
XLSX_MAX_CELLS = 10 * MAX_SINGLE_USE_CODES_PER_REQUEST
CELL_MAX_CHARACTERS = 1_000


class SpreadsheetTooLarge(ValueError):
    """A file past a bound; its message names the bound, and the row where it was met."""


def _too_large(message: str) -> NoReturn:
    raise SpreadsheetTooLarge(message)


def _mib(size: int) -> int:
    return -(-size // 2**20)


def cell_text(value: object) -> str:
    """A cell as the merchant typed it: spreadsheets give numbers for what is made of digits
    (a code, a user id), and nothing for an empty cell."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "" if value is None else str(value).strip()


def csv_rows(content: bytes) -> list[list]:
    """A CSV's rows, every one read here (a malformed line raises now, not later); UTF-8
    (with or without Excel's BOM) or, as Excel saves it in China, GB18030; any line ends."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = content.decode("gb18030")
    return list(csv.reader(io.StringIO(text, newline="")))


def xlsx_rows(content: bytes) -> Iterator[tuple]:
    """The first sheet's rows, streamed (openpyxl's read-only mode, the sheet's own claim of
    its size ignored), within the bounds above."""
    parts = zipfile.ZipFile(io.BytesIO(content)).infolist()
    unzipped = sum(part.file_size for part in parts)
    shared_strings = sum(p.file_size for p in parts if p.filename.endswith("sharedStrings.xml"))
    if unzipped > XLSX_MAX_UNZIPPED_BYTES:
        message = _("The file unzips to %(size)d MiB; at most %(most)d MiB.")
        _too_large(message % {"size": _mib(unzipped), "most": _mib(XLSX_MAX_UNZIPPED_BYTES)})
    if shared_strings > XLSX_MAX_SHARED_STRINGS_BYTES:
        message = _("The file's text takes %(size)d MiB; at most %(most)d MiB.")
        _too_large(
            message % {"size": _mib(shared_strings), "most": _mib(XLSX_MAX_SHARED_STRINGS_BYTES)}
        )
    workbook = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    try:
        sheet = workbook.worksheets[0]
        sheet.reset_dimensions()  # its <dimension> may claim A1:XFD1048576
        cells = 0
        for line, row in enumerate(sheet.iter_rows(values_only=True), 1):
            if line > XLSX_MAX_ROWS:
                message = _("Row %(line)d: a sheet has at most %(count)d rows, blank ones too.")
                _too_large(message % {"line": line, "count": XLSX_MAX_ROWS})
            cells += len(row)
            if cells > XLSX_MAX_CELLS:
                message = _("Row %(line)d: a sheet has at most %(count)d cells.")
                _too_large(message % {"line": line, "count": XLSX_MAX_CELLS})
            yield row
    finally:
        workbook.close()
