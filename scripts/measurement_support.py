"""What the in-process measurement scripts (measure_claim_cpu.py, measure_claim_statements.py)
share: the environment they set before Django starts, a database of their own on the MariaDB
server, and the claim fixture (shoppers with tokens, published templates, a test client that
checks every answer). Import it before anything imports Django."""

import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
# The MariaDB server's port (a private server keeps other clients' load out of the numbers).
PORT = next(
    (sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--port"),
    str(urlsplit(os.environ.get("DATABASE_URL", "")).port or 3306),  # the caller's server
)
PORT_HELP = "the MariaDB server's port (default: DATABASE_URL's, or 3306)"


def configure(database: str) -> None:
    """Production settings on `database` at 127.0.0.1:PORT, for this run only."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    os.environ["DATABASE_URL"] = f"mysql://root@127.0.0.1:{PORT}/{database}"
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(60))  # tokens live for this run


@contextmanager
def own_database(database: str) -> Iterator[None]:
    """`database` created on the server at PORT for the block, dropped after it."""
    import MySQLdb

    admin = MySQLdb.connect(host="127.0.0.1", port=int(PORT), user="root")
    admin.cursor().execute(f"CREATE DATABASE {database}")
    try:
        yield
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {database}")


class ClaimFixture:
    """The schema migrated in, `users` shoppers (`username_prefix`0, 1, ...) with bearer
    tokens, and a Django test client. Call after django.setup()."""

    def __init__(self, *, username_prefix: str, users: int) -> None:
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client
        from rest_framework_simplejwt.tokens import AccessToken

        from core import clock

        call_command("migrate", verbosity=0)
        user_model = get_user_model()
        self.username_prefix = username_prefix
        self.users = user_model.objects.bulk_create(
            user_model(username=f"{username_prefix}{i}", password="!") for i in range(users)
        )
        self.tokens = [f"Bearer {AccessToken.for_user(user)}" for user in self.users]
        self.now = clock.now()
        self.client = Client()

    def template(self, total: int) -> int:
        """A direct template of `total` coupons, claimable now: its id."""
        from coupons.services import templates

        return templates.coupon_template_publish(
            name=f"{self.username_prefix} {total}",
            type="direct",
            value=100,
            total=total,
            valid_from=self.now - timedelta(days=1),
            valid_until=self.now + timedelta(days=1),
        ).pk

    def request(self, method: str, path: str, user: int, expected: int) -> None:
        """`method` `path` as shopper number `user`; RuntimeError unless it answers `expected`."""
        response = getattr(self.client, method)(path, HTTP_AUTHORIZATION=self.tokens[user])
        if response.status_code != expected:
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:200]}")
