"""Local development: `make run`. Safe defaults for a laptop, never for the internet."""

from config.settings.secret_key import local_secret_key

from .base import *  # noqa: F403
from .base import SECRET_KEY, VAR_DIR

# No key in the environment: one made for this checkout on first start, kept in var/ (which
# git ignores), so no key anyone else knows ever signs this server's tokens.
SECRET_KEY = SECRET_KEY or local_secret_key(VAR_DIR / "secret_key")
DEMO_DATA_ALLOWED = True  # seed_demo's published password is fine here
