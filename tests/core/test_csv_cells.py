"""CSV injection (OWASP): text that a spreadsheet would run is exported as text."""

import pytest

from core.csv_cells import csv_cell, csv_row


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"],
)
def test_text_a_spreadsheet_would_run_gets_an_apostrophe(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["alice", "a=b", "", 42, -3, None, "1-2"])
def test_anything_else_is_unchanged(value):
    assert csv_cell(value) == value


def test_a_row_escapes_each_cell():
    assert csv_row([7, "=cmd", "bob"]) == [7, "'=cmd", "bob"]
