"""The Redis key prefix of a `make run` (config/settings/local.py), apart so it can be tested
without loading the local settings."""

import hashlib


def local_redis_prefix(*, checkout: str, database: str, port: str) -> str:
    """A key prefix of this checkout, database and port: two `make run`s on one Redis (another
    checkout, another PORT) never read each other's counters or throttles."""
    digest = hashlib.sha256(f"{checkout}\n{database}\n{port}".encode()).hexdigest()[:10]
    return f"local-{digest}:"
