"""Deployment values from the environment (config/settings/environment.py): typed, an empty
value taken as unset, a wrong one stopping the start with the variable's name; and every
settings module reads the environment through these helpers only."""

import re
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import env_bool, env_float, env_int, env_list, env_str

SETTINGS = Path(__file__).resolve().parents[2] / "config" / "settings"


def test_values_are_typed_and_an_empty_value_is_the_default(monkeypatch):
    monkeypatch.setenv("COUPONS_TEST_INT", " 42 ")
    monkeypatch.setenv("COUPONS_TEST_FLOAT", "0.25")
    monkeypatch.setenv("COUPONS_TEST_BOOL", "Yes")
    monkeypatch.setenv("COUPONS_TEST_LIST", "a, b,,c ")
    monkeypatch.setenv("COUPONS_TEST_EMPTY", "")

    assert env_int("COUPONS_TEST_INT", 1) == 42
    assert env_float("COUPONS_TEST_FLOAT", 1.0) == 0.25
    assert env_bool("COUPONS_TEST_BOOL") is True
    assert env_list("COUPONS_TEST_LIST", "") == ["a", "b", "c"]
    assert env_int("COUPONS_TEST_EMPTY", 7) == 7
    assert env_str("COUPONS_TEST_EMPTY", "default") == "default"
    assert env_bool("COUPONS_TEST_UNSET", True) is True


@pytest.mark.parametrize(
    ("reader", "value"),
    [(env_int, "8s"), (env_float, "fast"), (env_bool, "maybe")],
)
def test_a_wrong_value_stops_the_start_naming_the_variable(monkeypatch, reader, value):
    monkeypatch.setenv("DB_READ_TIMEOUT", value)

    with pytest.raises(ImproperlyConfigured, match=f"DB_READ_TIMEOUT='{value}'"):
        reader("DB_READ_TIMEOUT", 8)


def test_settings_read_the_environment_only_through_the_helpers():
    reading = re.compile(r"os\.environ(?!\.setdefault)|os\.getenv")
    readers = [
        path.name
        for path in sorted(SETTINGS.glob("*.py"))
        if path.name != "environment.py" and reading.search(path.read_text())
    ]

    assert readers == []
