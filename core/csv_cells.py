"""CSV exports that a spreadsheet opens as data, never as formulas (OWASP "CSV Injection")."""

# A cell starting with one of these is read as a formula (or, for tab and carriage return,
# can shift what a spreadsheet reads as the cell's start) by Excel, LibreOffice and Sheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """The value as a CSV cell: text that a spreadsheet would run as a formula gets a leading
    apostrophe, so it is shown as typed (`'=1+1`). Numbers and empty cells pass unchanged:
    only text can come from a user (a username, a reason)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_row(values: list[object]) -> list[object]:
    return [csv_cell(value) for value in values]
