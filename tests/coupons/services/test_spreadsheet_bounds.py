"""A merchant's spreadsheet is read in bounded memory and time (coupons/services/
merchant_codes.py): what an .xlsx expands to is checked before it is read, and it is streamed
with its rows and cells counted. The files of an attack (a sheet claiming 2,000 x 16,384 cells,
20 M blank rows, 200 M characters of shared strings, a cell at the last column of every row)
each answer a clean refusal naming the row within seconds, the reading process growing by
less than 100 MiB; each is read in a process of its own, whose peak memory is its own."""

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest

ROOT = Path(__file__).resolve().parents[3]
LIMIT_MIB = 100


def xlsx_with_sheet(sheet_xml: str, shared_strings_xml: str | None = None) -> bytes:
    """A workbook of openpyxl's making with its first sheet's XML (and shared strings)
    replaced: what a hand-made file can say."""
    book = openpyxl.Workbook()
    book.active["A1"] = "券码"
    made = io.BytesIO()
    book.save(made)
    source = zipfile.ZipFile(io.BytesIO(made.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for part in source.infolist():
            data = source.read(part.filename)
            if part.filename == "xl/worksheets/sheet1.xml":
                data = sheet_xml.encode()
            target.writestr(part.filename, data)
        if shared_strings_xml is not None:
            target.writestr("xl/sharedStrings.xml", shared_strings_xml.encode())
    return out.getvalue()


def sheet(rows: str, dimension: str = "A1") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="{dimension}"/><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>券码</t></is></c></row>'
        f"{rows}</sheetData></worksheet>"
    )


def code_row(line: int, code: str, extra: str = "") -> str:
    return f'<row r="{line}"><c r="A{line}" t="inlineStr"><is><t>{code}</t></is></c>{extra}</row>'


def read_in_its_own_process(tmp_path: Path, content: bytes) -> dict:
    path = tmp_path / "codes.xlsx"
    path.write_bytes(content)
    finished = subprocess.run(
        [sys.executable, "-m", "tests.support.codes_file_reading", str(path)],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(finished.stdout.strip().splitlines()[-1])


FILES = {
    # 1.6 KB claiming A1:XFD2000 (it took 10 s and +501 MiB): what it holds is read, no more
    "a claimed size of 2,000 x 16,384": (
        lambda: xlsx_with_sheet(sheet(code_row(2, "CLAIMED-0001"), dimension="A1:XFD2000")),
        {"codes": 1},
    ),
    # rows past the bound, blank (a 176 KB file of 20 M of them ran past 300 s, +1.7 GiB)
    "300,000 blank rows": (
        lambda: xlsx_with_sheet(sheet("".join(f'<row r="{n}"/>' for n in range(2, 300_002)))),
        {"refused": ["Row 200001: a sheet has at most 200000 rows, blank ones too."]},
    ),
    "one row at 20,000,000": (
        lambda: xlsx_with_sheet(sheet(code_row(20_000_000, "FAR-DOWN-0001"))),
        {"refused": ["Row 200001: a sheet has at most 200000 rows, blank ones too."]},
    ),
    "20 M blank rows": (
        lambda: xlsx_with_sheet(sheet("<row/>" * 20_000_000)),
        {"refused": ["The file unzips to 115 MiB; at most 32 MiB."]},
    ),
    # 200 M characters of shared strings (+940 MiB, then a 503): refused before reading
    "200 M characters of shared strings": (
        lambda: xlsx_with_sheet(
            sheet(""),
            '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1"'
            f' uniqueCount="1"><si><t>{"x" * 200_000_000}</t></si></sst>',
        ),
        {"refused": ["The file unzips to 191 MiB; at most 32 MiB."]},
    ),
    # every row's last cell at column XFD: 16,384 cells a row
    "cells at the last column": (
        lambda: xlsx_with_sheet(
            sheet("".join(code_row(n, f"WIDE-{n:06}", f'<c r="XFD{n}"/>') for n in range(2, 100)))
        ),
        {"refused": ["Row 63: a sheet has at most 1000000 cells."]},
    ),
    "a cell of 100,000 characters": (
        lambda: xlsx_with_sheet(sheet(code_row(2, "L" * 100_000))),
        {"refused": ["Row 2: a cell is longer than 1000 characters."]},
    ),
}


@pytest.mark.parametrize("name", FILES)
def test_a_file_is_read_in_bounded_memory_and_time(name, tmp_path):
    make, expected = FILES[name]
    content = make()
    assert len(content) <= 1024 * 1024  # under the body limit: only its expansion is large

    read = read_in_its_own_process(tmp_path, content)

    assert {key: read[key] for key in expected} == expected
    assert read["grew_mib"] < LIMIT_MIB, read
    assert read["seconds"] < 20, read
    print(f"{name}: {read}")  # for docs/measurements
