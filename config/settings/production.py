"""Production: every secret and host must come from the environment."""

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import env_bool, env_str
from config.settings.secret_key import refuse_unsafe_secret_key

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES, LOGGING, MYSQL_ENGINE, SECRET_KEY

refuse_unsafe_secret_key(SECRET_KEY, root=BASE_DIR)
if DATABASES["default"]["ENGINE"] != MYSQL_ENGINE:
    raise ImproperlyConfigured("DATABASE_URL must point at MySQL in production.")

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)

# One JSON object per log line unless LOG_FORMAT says plain.
LOG_FORMAT = env_str("LOG_FORMAT", "json")
LOGGING = {
    **LOGGING,
    "handlers": {"console": {**LOGGING["handlers"]["console"], "formatter": LOG_FORMAT}},
}
