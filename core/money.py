"""Money is stored in integer cents and shown and entered as currency (SPEC section 13).

One place for both directions, so the admin's columns, forms and the CSV agree:
`format_money(5000) == "¥50.00"` and `parse_money("¥50.00") == 5000` under COUPON_CURRENCY=CNY."""

import re
from decimal import Decimal

from django.conf import settings
from django.utils.translation import gettext as _

CURRENCY_SYMBOLS = {"CNY": "¥", "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "HKD": "HK$"}
CENTS_PER_UNIT = 100
# The largest amount a coupon may name (face value, threshold, cap): 10,000,000.00. Storage
# would take 92 quadrillion; anything past this is a slip (zeros too many, cents typed as
# units), refused with its field named rather than issued.
MAX_AMOUNT_CENTS = 10_000_000 * CENTS_PER_UNIT
AMOUNT_PATTERN = re.compile(r"[0-9]{1,20}(\.[0-9]{1,20})?|\.[0-9]{1,20}")


class MoneyInvalid(ValueError):
    """The text is not an amount of this currency; the message says why, for the form."""


def currency_symbol() -> str:
    code = settings.COUPON_CURRENCY
    return CURRENCY_SYMBOLS.get(code, f"{code} ")


def format_cents(cents: int) -> str:
    """5000 -> "50.00", 123456 -> "1,234.56": the amount without its symbol."""
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), CENTS_PER_UNIT)
    return f"{sign}{units:,}.{rest:02d}"


def format_money(cents: int | None) -> str:
    """5000 -> "¥50.00"; None -> "" (a column with no amount)."""
    if cents is None:
        return ""
    return f"{currency_symbol()}{format_cents(cents)}"


def parse_money(text: str) -> int:
    """ "50", "50.5", "50.00", "¥1,234.50" -> cents. Refuses anything finer than a cent,
    negatives, and what is not a number (MoneyInvalid with the reason)."""
    cleaned = text.strip().replace(",", "").replace(" ", "")
    for symbol in sorted({currency_symbol().strip(), *CURRENCY_SYMBOLS.values()}, key=len)[::-1]:
        cleaned = cleaned.removeprefix(symbol)
    if cleaned.startswith("-") and AMOUNT_PATTERN.fullmatch(cleaned[1:]):
        raise MoneyInvalid(_("The amount cannot be negative."))
    # Plain digits only: no exponents ("1e9"), no "NaN", no non-ASCII digits.
    if not AMOUNT_PATTERN.fullmatch(cleaned):
        raise MoneyInvalid(_("Enter an amount such as 50.00."))
    amount = Decimal(cleaned)
    cents = amount * CENTS_PER_UNIT
    if cents != cents.to_integral_value():
        raise MoneyInvalid(_("Use at most two decimal places (whole cents)."))
    return int(cents)
