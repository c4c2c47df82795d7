"""Local development: `make run`. Safe defaults for a laptop, never for the internet."""

from .base import *  # noqa: F403
from .base import SECRET_KEY

SECRET_KEY = SECRET_KEY or "local-development-only-not-secret-key-0123456789"
