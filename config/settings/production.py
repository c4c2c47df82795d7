"""Production: every secret and host must come from the environment."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import DATABASES, SECRET_KEY, env_bool

if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in production.")
if DATABASES["default"]["ENGINE"] != "django.db.backends.mysql":
    raise ImproperlyConfigured("DATABASE_URL must point at MySQL in production.")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
