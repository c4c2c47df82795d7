"""The kernel's money (core/money.py): integer cents in, currency text out, and back."""

import pytest

from core.money import MoneyInvalid, format_money, parse_money


@pytest.mark.parametrize(
    ("text", "cents"),
    [("50", 5000), ("50.5", 5050), ("50.00", 5000), ("¥1,234.56", 123456), (" .07 ", 7)],
)
def test_money_is_entered_as_currency_and_stored_in_cents(text, cents):
    assert parse_money(text) == cents


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("12.345", "two decimal places"),
        ("-1", "negative"),
        ("1e5", "such as 50.00"),
        ("NaN", "such as 50.00"),
        ("٥٠", "such as 50.00"),
        ("", "such as 50.00"),
    ],
)
def test_money_that_is_not_an_amount_is_refused_with_the_reason(text, reason):
    with pytest.raises(MoneyInvalid, match=reason):
        parse_money(text)


def test_money_is_shown_in_the_configured_currency(settings):
    assert (format_money(5000), format_money(123456), format_money(None)) == (
        "¥50.00",
        "¥1,234.56",
        "",
    )
    settings.COUPON_CURRENCY = "USD"
    assert format_money(7) == "$0.07"
