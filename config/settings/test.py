"""The test suite: real MariaDB and real Redis, never SQLite (see tests/conftest.py)."""

import os
import tempfile
import uuid

os.environ.setdefault("DATABASE_URL", "mysql://root@127.0.0.1:3306/coupons")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
# Each run keys the shared Redis under a prefix of its own (each test under one of its own
# beside it: tests/conftest.py), so an app server a test starts, which keeps this one, never
# meets a user's facts an earlier run left: the test database starts its ids again, and facts
# live 15 minutes (a run's new user 1 would be refused by the old user 1's password digest).
# Set in the environment, so that every process the run starts keeps the same one.
os.environ.setdefault("COUPON_REDIS_PREFIX", f"run-{uuid.uuid4().hex[:8]}:")
# Staff jobs' files, in a folder of the run's own, shared by the workers it starts.
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="coupons-test-media-"))

from .base import *  # noqa: E402, F403

# The replica alias exists in every run, as a second connection to the test database (a
# mirror), so that the routing tests (tests/core/test_read_routing.py) can turn the routing
# on; everywhere else reads stay on default, where TestCase's transaction holds the data.
DATABASES.setdefault("replica", replica_database(DATABASES["default"]))  # noqa: F405
DATABASE_REPLICA_READS = False

SECRET_KEY = "test-only-not-secret-but-long-enough-for-hs256"
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGGING = {"version": 1, "disable_existing_loggers": False}
# Throttles off in effect for the suite (races send many requests per user and per IP);
# tests/api/test_throttles.py sets the real, low rates.
THROTTLE_RATES = {scope: "100000/min" for scope in THROTTLE_RATES}  # noqa: F405
# Each test's /healthz sees the Redis and database of that moment; the tests of the cache set
# it back (tests/ops/test_health.py).
HEALTH_CACHE_SECONDS = 0.0
WHITENOISE_AUTOREFRESH = True  # serve static files from the apps; no collectstatic in tests
DEMO_DATA_ALLOWED = True  # seed_demo's published password is fine here
