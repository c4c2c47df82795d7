"""Two `make run`s on one Redis (SPEC section 23): config/settings/local.py keys each server's
counter and cache by checkout, database and port, so another PORT or another checkout never
reads this one's counts or throttles. Run for real, in processes with the local settings."""

import os
import subprocess
import sys
from pathlib import Path

import redis
from django.conf import settings

from config.settings.local_redis import local_redis_prefix

ROOT = Path(__file__).resolve().parents[2]

# Writes a cache key (what the throttles count in), reads the other server's, and says where
# the counter puts a template's count.
ONE_SERVER = """
import django
django.setup()
from django.conf import settings
from django.core.cache import cache
from coupons.issuing.counter_setup import counter_from_settings
port = __import__("os").environ["PORT"]
seen = cache.get("probe")
cache.set("probe", port, 60)
print(settings.COUPON_REDIS_PREFIX, counter_from_settings().count_keys(7, 'i', 1)[0], seen)
"""


def run_server_settings(tmp_path: Path, port: str) -> list[str]:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": settings.REDIS_URL,
        "PORT": port,
        "PYTHONPATH": str(ROOT),
    }
    for name in ("COUPON_REDIS_PREFIX", "COUPON_COUNTER_REDIS_URL", "SECRET_KEY"):
        environment.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", ONE_SERVER],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


def test_two_ports_keep_their_keys_apart(tmp_path):
    first = run_server_settings(tmp_path, "18001")
    second = run_server_settings(tmp_path, "18002")
    again = run_server_settings(tmp_path, "18001")
    try:
        prefix, counter_key, seen = first
        assert prefix.startswith("local-") and counter_key == f"{prefix}coupon:claimed:{{7}}:i"
        assert seen == "None"  # nothing there before
        assert second[0] != prefix and second[1].startswith(second[0])
        assert second[2] == "None"  # the other port's cache key is not this one's
        assert again[:2] == first[:2] and again[2] == "18001"  # the same server finds its own
    finally:
        client = redis.Redis.from_url(settings.REDIS_URL)
        for server_prefix in {first[0], second[0]}:
            for key in client.scan_iter(match=f"{server_prefix}*"):
                client.delete(key)


def test_another_checkout_or_database_is_another_prefix():
    here = local_redis_prefix(checkout="/srv/a", database=":/coupons", port="8000")

    assert local_redis_prefix(checkout="/srv/b", database=":/coupons", port="8000") != here
    assert local_redis_prefix(checkout="/srv/a", database=":/other", port="8000") != here
    assert local_redis_prefix(checkout="/srv/a", database=":/coupons", port="8000") == here
