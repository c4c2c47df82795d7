"""SECRET_KEY safety, used while the settings load (so nothing here reads django.conf).

Production refuses a key that is short or that anyone with the repository knows; local
development makes its own key once and keeps it outside version control."""

import os
import secrets
import zlib
from pathlib import Path
from typing import NamedTuple

from django.core.exceptions import ImproperlyConfigured

MIN_LENGTH = 50
# Variety (SPEC section 19): length alone let a key of one repeated letter through. Django's
# own check (security.W009, only under `check --deploy`, a warning) asks 5 distinct
# characters and no "django-insecure-" prefix; we refuse at startup and ask more:
# - at least 10 distinct characters (a random hex key of 50 has 12 or more in 2,000 draws);
# - at least 32 bytes once zlib has taken out repetitions ("abcdefghij" * 6 leaves 13; a
#   random 50-character hex key leaves 40 or more, secrets.token_urlsafe(50) about 67).
MIN_DISTINCT_CHARACTERS = 10
MIN_COMPRESSED_BYTES = 32
DJANGO_INSECURE_PREFIX = "django-insecure-"

# Every key ever committed to this repository (git log -p -S SECRET_KEY), refused in
# production even after the files that held them change.
KNOWN_REPO_KEYS = frozenset(
    {
        "change-me-in-a-real-deployment-0123456789",
        "local-development-only-not-secret-key-0123456789",
        "test-only-not-secret-but-long-enough-for-hs256",
    }
)

# What counts as "the repository" when looking for the key at startup: the source tree,
# without what is never committed (.gitignore: .venv/, var/, caches) and without the .env
# files, which is where a real key is meant to live.
SKIPPED_DIRS = frozenset({".git", ".venv", "var", "__pycache__", ".pytest_cache", ".ruff_cache"})
SKIPPED_FILES = frozenset({".env"})
MAX_SCANNED_FILE_BYTES = 2 * 1024 * 1024


def repo_files_containing(text: str, root: Path) -> list[Path]:
    """The files of the source tree under `root` that contain `text`."""
    found = []
    needle = text.encode()
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [name for name in subdirs if name not in SKIPPED_DIRS]
        for name in files:
            if name in SKIPPED_FILES:
                continue
            path = Path(directory, name)
            try:
                if path.stat().st_size > MAX_SCANNED_FILE_BYTES:
                    continue
                if needle in path.read_bytes():
                    found.append(path)
            except OSError:
                continue
    return found


class SecretKeyVariety(NamedTuple):
    distinct: int  # distinct characters
    compressed_bytes: int  # zlib's output beyond what it writes for an empty input


def secret_key_variety(key: str) -> SecretKeyVariety:
    compressed = len(zlib.compress(key.encode(), 9)) - len(zlib.compress(b"", 9))
    return SecretKeyVariety(distinct=len(set(key)), compressed_bytes=compressed)


def refuse_unsafe_secret_key(key: str, *, root: Path) -> None:
    """Raise ImproperlyConfigured unless `key` is fit for production."""
    if len(key) < MIN_LENGTH:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {MIN_LENGTH} characters in production; generate one "
            "with: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    variety = secret_key_variety(key)
    if (
        variety.distinct < MIN_DISTINCT_CHARACTERS
        or variety.compressed_bytes < MIN_COMPRESSED_BYTES
        or key.startswith(DJANGO_INSECURE_PREFIX)
    ):
        raise ImproperlyConfigured(
            f"SECRET_KEY has too little variety ({variety.distinct} distinct characters, "
            f"{variety.compressed_bytes} bytes compressed; at least {MIN_DISTINCT_CHARACTERS} "
            f"and {MIN_COMPRESSED_BYTES} needed, and no {DJANGO_INSECURE_PREFIX!r} prefix); "
            "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    if key in KNOWN_REPO_KEYS:
        raise ImproperlyConfigured("SECRET_KEY is a key committed to this repository.")
    found = repo_files_containing(key, root)
    if found:
        names = ", ".join(str(path.relative_to(root)) for path in found[:3])
        raise ImproperlyConfigured(f"SECRET_KEY appears in the repository ({names}).")


def local_secret_key(path: Path) -> str:
    """The development key kept in `path` (git-ignored), generated on first use. Written to a
    temporary file and linked into place, so processes starting together agree on one key."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process won; use its key
        finally:
            draft.unlink()
    return path.read_text().strip()
