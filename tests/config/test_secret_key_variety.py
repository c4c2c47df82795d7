"""A production SECRET_KEY needs variety, not only length (SPEC section 19, issue 16 finding
10): a 60-character key of one repeated letter was accepted."""

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.secret_key import refuse_unsafe_secret_key

REPO = Path(__file__).resolve().parents[2]

DJANGO_KEY_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"
POOR_KEYS = {
    "one letter": "a" * 60,
    "two letters": "ab" * 30,
    "a short run repeated": "abcdefghij" * 6,
    "four characters, as Django's check would flag": "wxyz" * 15,
    "Django's insecure marker": "django-insecure-" + secrets.token_urlsafe(50),
}


@pytest.mark.parametrize("key", POOR_KEYS.values(), ids=POOR_KEYS.keys())
def test_production_refuses_a_key_with_little_variety(key):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        refuse_unsafe_secret_key(key, root=REPO)


@pytest.mark.parametrize(
    "key",
    [
        secrets.token_urlsafe(50),
        secrets.token_hex(25),
        secrets.token_hex(32),
        "".join(secrets.choice(DJANGO_KEY_CHARACTERS) for _ in range(50)),
    ],
    ids=["token_urlsafe(50)", "token_hex(25)", "token_hex(32)", "django get_random_secret_key"],
)
def test_keys_made_the_usual_ways_are_accepted(key):
    refuse_unsafe_secret_key(key, root=REPO)  # does not raise


def test_the_production_settings_refuse_to_start_with_one_repeated_letter():
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DATABASE_URL": "mysql://coupons:x@127.0.0.1:3306/coupons",
            "SECRET_KEY": "a" * 60,
        },
        capture_output=True,
        text=True,
    )

    assert result.returncode != 0
    assert "SECRET_KEY has too little variety" in result.stderr
    assert "started" not in result.stdout
