"""Local development: `make run`. Safe defaults for a laptop, never for the internet."""

from config.settings.environment import env_str
from config.settings.local_redis import local_redis_prefix
from config.settings.secret_key import local_secret_key

from .base import *  # noqa: F403
from .base import BASE_DIR, CACHES, COUPON_REDIS_PREFIX, DATABASES, SECRET_KEY, VAR_DIR

# No key in the environment: one made for this checkout on first start, kept in var/ (which
# git ignores), so no key anyone else knows ever signs this server's tokens.
SECRET_KEY = SECRET_KEY or local_secret_key(VAR_DIR / "secret_key")
DEMO_DATA_ALLOWED = True  # seed_demo's published password is fine here
# The demo is a shop in China: the admin's times in Beijing time unless TIME_ZONE says
# otherwise (a deployment's settings keep UTC as their default).
TIME_ZONE = env_str("TIME_ZONE", "Asia/Shanghai")

# No prefix in the environment: one of this checkout, database and port (PORT, which make run
# and scripts/serve set), for the counter and the cache alike.
if not COUPON_REDIS_PREFIX:
    database = DATABASES["default"]
    COUPON_REDIS_PREFIX = local_redis_prefix(
        checkout=str(BASE_DIR),
        database=f"{database.get('HOST', '')}:{database.get('PORT', '')}/{database['NAME']}",
        port=env_str("PORT", "8000"),
    )
    CACHES = {**CACHES, "default": {**CACHES["default"], "KEY_PREFIX": COUPON_REDIS_PREFIX}}

# No broker in the environment: Celery's messages go through files under var/ (kombu's
# filesystem transport), so `make run` needs no RabbitMQ on a fresh machine; its worker and
# beat run in one process beside the server (scripts/serve). Set CELERY_BROKER_URL for RabbitMQ.
if not env_str("CELERY_BROKER_URL", ""):
    CELERY_QUEUE_DIR = VAR_DIR / "celery-queue"
    CELERY_QUEUE_DIR.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR),
        "data_folder_out": str(CELERY_QUEUE_DIR),
        "control_folder": str(CELERY_QUEUE_DIR / "control"),
        "store_processed": False,
    }
