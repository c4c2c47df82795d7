"""Storage bounds shared by every app: a client value beyond them is a 400, never an overflow."""

MAX_BIGINT = 2**63 - 1  # signed BIGINT: what every backend (SQLite included) can store
MAX_INT_UNSIGNED = 2**32 - 1
# An id typed by a client (a URL, a query parameter, a form): ASCII digits, at most this many,
# so that any of them fits a signed BIGINT and int() never meets thousands of digits.
MAX_ID_DIGITS = 18
ID_REGEX = f"[0-9]{{1,{MAX_ID_DIGITS}}}"
MAX_ID = 10**MAX_ID_DIGITS - 1


def is_id_text(text: str) -> bool:
    """Whether `text` is an id as a client may type one: 1 to MAX_ID_DIGITS ASCII digits
    (str.isdigit() alone also accepts digits such as "²" or "１" that int() refuses or that
    no id is written in)."""
    return text.isascii() and text.isdigit() and len(text) <= MAX_ID_DIGITS
