"""Settings shared by every environment. Every deployment value comes from the environment,
read through config/settings/environment.py (typed, named when it is wrong)."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy

from config.settings.environment import env_bool, env_float, env_int, env_list, env_str
from core.limits import MAX_ID
from core.metrics import TimedRedisConnection

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"


# --- Core -------------------------------------------------------------------------------------

SECRET_KEY = env_str("SECRET_KEY", "")
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
# Origins other than the page's own allowed to post forms. The page's own needs no entry on
# any port: the shipped nginx passes the Host with its port (decision 0520).
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# A CSRF refusal in the JSON envelope under /api/ and on /healthz, Django's page elsewhere.
CSRF_FAILURE_VIEW = "api.exceptions.csrf_failure"
# Reverse proxies (addresses or networks) whose X-Forwarded-Proto the app believes when it
# builds absolute links (pagination); anyone else's is dropped by the first middleware. Empty:
# nobody's. The shipped nginx passes the client's Host itself, so no X-Forwarded-Host is read.
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", "")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    # The admin's look (Element UI, decision 0900): before django.contrib.admin, whose templates
    # it replaces.
    "simpleui",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # Listed for its translations (simplejwt's login and token errors in zh-hans; decision 0642).
    "rest_framework_simplejwt",
    "rest_framework_simplejwt.token_blacklist",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "api",
    "coupons",
    "orders",
    "accounts",
    "ops",
    "backoffice",
    "backoffice.staff_jobs",
]

MIDDLEWARE = [
    "ops.middleware.ForwardedHeadersFromProxiesMiddleware",
    # Next: the request id and the request's metrics cover every answer below (ops/vitals.py).
    "ops.vitals.RequestVitalsMiddleware",
    "ops.middleware.RequestBodyLimitMiddleware",
    # Before anything checks the Host (CommonMiddleware): a load balancer probes by address.
    "ops.middleware.HealthzByAddressMiddleware",
    "ops.middleware.DatabaseBreakerMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions (the admin's language choice is a cookie), before common: picks zh-hans or
    # English per request from the cookie or Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # simpleui drops Django's XFrameOptionsMiddleware (its tabs are frames); this one lets only
    # pages of this site frame ours (X_FRAME_OPTIONS below).
    "ops.middleware.FramesFromThisSiteOnlyMiddleware",
]
# The API's chain (config/handlers.py): MIDDLEWARE in its order, without what serves only the
# admin's pages (sessions, CSRF, authentication, messages), /static/ (WhiteNoise) and the
# probes by address.
API_MIDDLEWARE = [
    "ops.middleware.ForwardedHeadersFromProxiesMiddleware",
    "ops.vitals.RequestVitalsMiddleware",
    "ops.middleware.RequestBodyLimitMiddleware",
    "ops.middleware.DatabaseBreakerMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "ops.middleware.FramesFromThisSiteOnlyMiddleware",
]

# W003 names the one library we mean to replace: simpleui's tags by ops/simpleui_tags.py.
SILENCED_SYSTEM_CHECKS = ["templates.W003"]

ROOT_URLCONF = "config.urls"
# GET /bench/bare (api/bare.py): DRF with nothing of ours, the benchmark's ceiling row. Off
# unless the environment turns it on (`make bench` does, for its own server).
BENCH_BARE_VIEW = env_bool("BENCH_BARE_VIEW")
WSGI_APPLICATION = "config.wsgi.application"

# Bodies over 1 MiB are 413 `too_large` (SPEC section 12), wherever they are read.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("REQUEST_BODY_MAX_BYTES", 1024 * 1024)
# But for the staff's file uploads that a worker reads (SPEC section 34: 100,000 codes or
# users in one CSV or XLSX): these admin pages take files up to STAFF_FILE_MAX_BYTES (nginx
# has the same exception, deploy/nginx/coupons.conf.template).
STAFF_FILE_MAX_BYTES = env_int("STAFF_FILE_MAX_BYTES", 8 * 1024 * 1024)
STAFF_FILE_PATHS = r"^/admin/coupons/coupontemplate/[0-9]+/(codes/import|grant/file)/$"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],  # project-wide admin overrides
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # simpleui's tags, with the page's language and time zone (ops/simpleui_tags.py).
            "libraries": {"simpletags": "ops.simpleui_tags"},
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
# DATABASE_URL=mysql://user:pass@host:3306/name for MySQL/MariaDB (production, tests).
# Without it, an embedded SQLite file so that `make run` works on a bare machine.


# Django's MySQL backend with a kept connection checked without a round trip.
MYSQL_ENGINE = "core.database_backend"
# A kept connection unused longer than this (seconds) is also pinged before its next
# statement (a peer gone without closing); a busy one is not (decision 1012).
DATABASE_CONNECTION_IDLE_CHECK = env_float("DB_CONN_IDLE_CHECK", 5)

# A row lock waited on longer than this (seconds) is MySQL error 1205, answered 503.
DATABASE_LOCK_WAIT_TIMEOUT = env_int("DB_LOCK_WAIT_TIMEOUT", 5)


def database_from_env() -> dj_database_url.DBConfig:
    url = env_str("DATABASE_URL", "")
    if not url:
        VAR_DIR.mkdir(exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "db.sqlite3"),
            # IMMEDIATE makes write transactions take the write lock at BEGIN, so they
            # serialize instead of failing with "database is locked" halfway through.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    config = dj_database_url.parse(
        url,
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        # A kept connection that died (database restarted, failover) is found before the
        # next request's first statement and replaced, instead of failing that request: by
        # its socket, and by a ping only after it sat idle (core/database_backend/base.py).
        conn_health_checks=env_bool("DB_CONN_HEALTH_CHECKS", True),
    )
    if config["ENGINE"] == "django.db.backends.mysql":
        config["ENGINE"] = MYSQL_ENGINE
        config["OPTIONS"] = {
            "charset": "utf8mb4",
            "isolation_level": "read committed",
            # A row lock held too long is an error after this many seconds, not a hung worker.
            "init_command": "SET sql_mode='STRICT_TRANS_TABLES', innodb_lock_wait_timeout="
            + str(DATABASE_LOCK_WAIT_TIMEOUT),
            **database_timeouts(),
        }
        config["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    return config


def database_timeouts() -> dict[str, int]:
    """Client-side bounds (whole seconds, what the client library takes) so that a stalled
    database costs a request seconds, not a worker: connect, and each read / write of a
    statement. The read timeout must exceed the lock wait, or a lock wait would surface as a
    lost connection. 0 turns one off (e.g. for a long manual migration)."""
    timeouts = {
        "connect_timeout": env_int("DB_CONNECT_TIMEOUT", 2),
        "read_timeout": env_int("DB_READ_TIMEOUT", 8),
        "write_timeout": env_int("DB_WRITE_TIMEOUT", 8),
    }
    return {name: seconds for name, seconds in timeouts.items() if seconds > 0}


def decision_database(default: dj_database_url.DBConfig) -> dj_database_url.DBConfig:
    """The coupon decision's own connection to the same MySQL database (alias "decision";
    coupons/issuing/transaction.py, docs/decisions/0240-decision-connection.md): the
    default's settings and OPTIONS (READ COMMITTED, the lock wait, the timeouts, the health
    check), but kept out of autocommit, so a decision opens its transaction with its first
    statement and ends it with one CALL (docs/decisions/0700-claim-decision-in-one-call.md).
    Tests see it as a mirror of "default" (the same test database)."""
    return {
        **default,
        "OPTIONS": dict(default.get("OPTIONS", {})),
        "AUTOCOMMIT": False,
        "TEST": {**default.get("TEST", {}), "MIRROR": "default"},
    }


# Each read on the replica alias first waits until its node has applied every write the
# cluster committed before the read began (Galera's wsrep_sync_wait; 1: SELECT and SHOW; 0:
# no wait, reads may be a moment behind). Harmless on a server without wsrep.
DATABASE_REPLICA_SYNC_WAIT = env_int("DATABASE_REPLICA_SYNC_WAIT", 1)


def replica_database(default: dj_database_url.DBConfig, url: str = "") -> dj_database_url.DBConfig:
    """The alias "replica" (core/read_routing.py, docs/decisions/0801-read-routing.md): reads
    that need not see the caller's own writes, on another node of the cluster (`url`, e.g.
    HAProxy's reader port; empty: the default's own server), with the default's settings and
    OPTIONS plus the wait above. Tests see it as a mirror of "default"."""
    server = dj_database_url.parse(url) if url else default
    options = dict(default.get("OPTIONS", {}))
    options["init_command"] = (
        f"{options['init_command']}, wsrep_sync_wait={DATABASE_REPLICA_SYNC_WAIT}"
    )
    return {
        **default,
        "NAME": server["NAME"],
        "USER": server["USER"],
        "PASSWORD": server["PASSWORD"],
        "HOST": server["HOST"],
        "PORT": server["PORT"],
        "OPTIONS": options,
        "TEST": {**default.get("TEST", {}), "MIRROR": "default"},
    }


DATABASES = {"default": database_from_env()}
# SQLite (`make run` without DATABASE_URL) has no decision alias: decisions take the default
# connection there; nor a replica.
if DATABASES["default"]["ENGINE"] == MYSQL_ENGINE:
    DATABASES["decision"] = decision_database(DATABASES["default"])
    if env_str("DATABASE_REPLICA_URL", ""):
        DATABASES["replica"] = replica_database(
            DATABASES["default"], env_str("DATABASE_REPLICA_URL", "")
        )
# Reads marked as needing not see the caller's own writes go to the replica when there is one
# (else everything stays on default, the writer).
DATABASE_REPLICA_READS = "replica" in DATABASES
DATABASE_ROUTERS = ["core.read_routing.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Database down or stalled: 503 `unavailable` with this Retry-After (seconds), and one log
# line per kind of failure per interval (ops/database_faults.py).
DATABASE_UNAVAILABLE_RETRY_AFTER = env_int("DATABASE_UNAVAILABLE_RETRY_AFTER", 5)
DATABASE_FAULT_LOG_INTERVAL = env_float("DATABASE_FAULT_LOG_INTERVAL", 10)
# After a request found the database server away, answer 503 at once for this long.
DATABASE_BREAKER_SECONDS = env_float("DATABASE_BREAKER_SECONDS", 2)
# /healthz answers within this many seconds whatever the database does (ops/health.py),
# and one answer serves every call for HEALTH_CACHE_SECONDS (at most 1: SPEC section 19).
HEALTH_TIMEOUT = env_float("HEALTH_TIMEOUT", 0.5)
HEALTH_CACHE_SECONDS = min(env_float("HEALTH_CACHE_SECONDS", 1.0), 1.0)
# A database check that is still running is slow, not down, for this long after the database
# last answered: a loaded database is not taken out of service (SPEC section 25).
HEALTH_SLOW_GRACE = env_float("HEALTH_SLOW_GRACE", 3.0)
# `host:port` where every server process also answers the probes on threads of its own
# (ops/probe_listener.py, decision 1032); empty: the probes on the app's port only.
PROBE_BIND = env_str("PROBE_BIND", "")
# GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; empty: /metrics is off (404).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# Wiring, not configuration: the callables ops uses without importing an app (typing
# Protocols in core/database_errors.py and ops/health.py). The API's exception handler
# reports a database outage to the first; /healthz pings the Redis the second returns.
DATABASE_FAULT_REPORTER = "ops.database_faults.report_database_unavailable"
HEALTH_REDIS = "coupons.issuing.coupon_counter"
# Collectors of the apps' own vitals that /metrics gathers at each scrape (ops/vitals.py).
METRICS_COLLECTORS = (
    "coupons.auto_issue.vitals.AutoIssueCollector",
    "backoffice.staff_jobs.vitals.StaffJobsCollector",
)
# The stored procedures the app calls (MySQL): /healthz is `down`, naming them to staff, while
# one is missing (a dump restored without --routines); `manage.py restore_procedures`.
HEALTH_REQUIRED_PROCEDURES = ("coupon_decide",)
# How often the scheduler lowers Redis claim counts that are above the database's
# (coupons/issuing/reconcile.py; after a restore from backup, say).
COUPON_COUNTER_RECONCILE_SECONDS = env_float("COUPON_COUNTER_RECONCILE_SECONDS", 60)
# How often the scheduler raises the database's epoch and Redis's after it: a restore is
# recognised within this period (coupons/models/counter_epoch.py).
COUPON_COUNTER_EPOCH_SECONDS = env_float("COUPON_COUNTER_EPOCH_SECONDS", 1)
if COUPON_COUNTER_RECONCILE_SECONDS <= 0 or COUPON_COUNTER_EPOCH_SECONDS <= 0:
    raise ImproperlyConfigured(
        "COUPON_COUNTER_RECONCILE_SECONDS and COUPON_COUNTER_EPOCH_SECONDS must be above 0."
    )
# XLSX exports (backoffice/coupon_admin/spreadsheets.py): a control character in a name is dropped
# rather than failing the download (openpyxl refuses it).
IMPORT_EXPORT_ESCAPE_ILLEGAL_CHARS_ON_EXPORT = True

# The one-second watches `manage.py run_scheduler` runs, each on a thread of its own, apart from
# the task queue so that no backlog of work ever delays them (decision 1024): name -> (dotted
# path of a callable taking nothing and returning a line to print or None, seconds).
SCHEDULED_JOBS: dict[str, str | tuple[str, float]] = {
    # A database restored from a backup, or a Redis gone back in time, is recognised within
    # this watch's period and Redis's facts are reset (coupons/models/counter_epoch.py,
    # decision 1018).
    "counter epoch": (
        "coupons.issuing.coupon_counters_follow_the_database",
        COUPON_COUNTER_EPOCH_SECONDS,
    ),
    # Cached facts of users whose change Redis did not confirm (accounts/user_facts.py).
    "user facts to forget": ("accounts.user_facts.user_facts_forget_noted", 1),
}

# --- Background work: Celery on RabbitMQ (docs/decisions/1024-background-work-on-celery.md) ---

# Durable queues on RabbitMQ; a task is acknowledged only once it ran (a worker killed midway
# leaves it to another), one message prefetched at a time, so a long task holds no others.
# Every task is safe to run twice; the database is the truth (an outbox row, a lease).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "coupons")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True  # outcomes live in the database, not a result backend
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # the project's logging (JSON lines, request ids)
# Periodic work, sent by celery beat; each message expires after its period, so a backlog
# left while no worker ran is not run many times over.
# A coupon an event earned is sent to a worker under this lease: past it, a task whose worker
# died or whose message was lost (or never sent: a relay killed midway) is taken and sent again;
# a second delivery of a task issues nothing twice (the reason's key, the attempt it carries).
AUTO_ISSUE_LEASE_SECONDS = env_float("AUTO_ISSUE_LEASE_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    name: {"task": task, "schedule": seconds, "options": {"expires": seconds}}
    for name, task, seconds in [
        # Unpaid orders past their deadline, cancelled within about 20 s of it.
        ("order expiry", "orders.expire_overdue_orders", 20.0),
        ("expired tokens", "accounts.flush_expired_tokens", 3600.0),
        ("idempotency records", "api.purge_idempotency_records", 3600.0),
        ("coupon counters", "coupons.counters_reconcile", COUPON_COUNTER_RECONCILE_SECONDS),
        # Coupons earned by sign-ups and paid orders: the outbox's due rows, each sent once a
        # lease to a worker that issues it (coupons/auto_issue/jobs.py).
        ("automatic issues", "coupons.auto_issue_relay", 2.0),
        # Staff jobs whose message may be lost, sent again (backoffice/staff_jobs/running.py).
        ("staff jobs lost", "staff_jobs.resend_lost", 60.0),
        ("staff jobs' old files", "staff_jobs.forget_files", 3600.0),
    ]
}
# A staff job running but not heard from for this long is taken as lost with its worker (a
# killed worker's job comes back at once, by the broker's redelivery; this is the fallback).
STAFF_JOB_STALE_SECONDS = env_float("STAFF_JOB_STALE_SECONDS", 120)
# A finished job's files (the file sent, the export) are deleted this many days after it ended.
STAFF_JOB_FILES_KEPT_DAYS = env_float("STAFF_JOB_FILES_KEPT_DAYS", 7)

# --- Redis (advisory counters; docs/decisions/0004-redis-advisory-counters-with-versions.md) ---

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# The coupon counter's Redis (coupons.issuing.counter_setup.counter_from_settings reads these,
# nothing else does): by default the same server; with COUPON_REDIS_CLUSTER=1 the URL names any
# node of a Redis Cluster.
COUPON_COUNTER_REDIS_URL = env_str("COUPON_COUNTER_REDIS_URL", REDIS_URL)
COUPON_REDIS_CLUSTER = env_bool("COUPON_REDIS_CLUSTER")
# Prepended to every key this deployment writes in Redis, the counter's and the cache's (the
# throttles): several deployments, test runs or `make run`s share one Redis without meeting.
# config/settings/local.py makes one per checkout, database and port when it is not set.
COUPON_REDIS_PREFIX = env_str("COUPON_REDIS_PREFIX", "")
# Every counter call is on a request's path, so one timeout (connect and read) bounds each.
COUPON_COUNTER_CLAIM_TIMEOUT = env_float("COUPON_COUNTER_CLAIM_TIMEOUT", 0.25)
COUPON_COUNTER_BACKOFF = env_float("COUPON_COUNTER_BACKOFF", 5)
# Cached template terms (SPEC section 15) live this many seconds from the database read they
# came from; a staff change that cannot reach Redis waits this long before it returns.
COUPON_TERMS_LEASE = env_float("COUPON_TERMS_LEASE", 5)
# Wiring, not configuration: which callable tells coupons which category and product ids exist
# (coupons.catalog). The orders app provides it; coupons never imports orders.
COUPON_SCOPE_CATALOG = "orders.catalog.OrdersCatalog"
# The same for "has this user ever paid for an order" (coupons.customers, audience new_customers).
COUPON_CUSTOMER_HISTORY = "orders.customers.OrdersCustomerHistory"

CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": COUPON_REDIS_PREFIX,
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": 0.25,
            "SOCKET_TIMEOUT": 0.25,
            # Each round trip timed for /metrics (core/metrics.py).
            "CONNECTION_POOL_KWARGS": {"connection_class": TimedRedisConnection},
            # The cache is an optimisation: a Redis outage must not fail requests.
            "IGNORE_EXCEPTIONS": True,
        },
    }
}

# --- Throttles (api/throttles.py, accounts/throttles.py): counted in the cache's Redis; ----
# while it is down password and code guesses are counted per process. The claim's own
# ("claim", per user and template) is counted in the coupon counter's claim script.

THROTTLE_RATES = {
    # Failed logins (API and admin) per (username, client IP): the lockout a guesser meets.
    "login_username_ip": env_str("THROTTLE_LOGIN_USERNAME_IP", "10/min"),
    # Failed logins per username from all addresses: high enough that one address (locked
    # out after 10) cannot lock the account for its owner elsewhere.
    "login_username": env_str("THROTTLE_LOGIN_USERNAME", "100/min"),
    # Failed logins per client IP, across usernames: a ceiling on one address spraying many
    # accounts, set so that a shared address (an office NAT, a carrier's CGNAT) full of honest
    # typos does not lock out its users who never logged in there (decision 0632).
    "login_ip": env_str("THROTTLE_LOGIN_IP", "300/min"),
    "refresh": env_str("THROTTLE_REFRESH", "30/min"),  # token refreshes per user
    # Registrations (each attempt) per client IP and per name tried: the answer says whether
    # a name is taken, so these bound how many names anyone can test (decision 1026).
    "register_ip": env_str("THROTTLE_REGISTER_IP", "20/h"),
    "register_username": env_str("THROTTLE_REGISTER_USERNAME", "5/h"),
    "claim": env_str("THROTTLE_CLAIM", "60/min"),
    "redeem": env_str("THROTTLE_REDEEM", "10/min"),  # code redemptions per user
    "redeem_ip": env_str("THROTTLE_REDEEM_IP", "60/min"),  # ... per client IP
    # Per user: one shopper cannot take a whole stock by ordering in a loop (SPEC section 19).
    "checkout": env_str("THROTTLE_CHECKOUT", "30/min"),
    # Refusals (4xx) per user whose answer an Idempotency-Key keeps for replay; past it the
    # refusal is answered and not kept (api/idempotency.py): no row per refusal of a flood.
    "idempotent_refusals": env_str("THROTTLE_IDEMPOTENT_REFUSALS", "20/min"),
}
# An address an account logged in from skips the per-account and per-address login ceilings
# for that account this long after its last login; the newest few per account are kept
# (accounts/known_addresses.py, decision 0632).
LOGIN_KNOWN_ADDRESS_DAYS = env_int("LOGIN_KNOWN_ADDRESS_DAYS", 30)
LOGIN_KNOWN_ADDRESSES_MAX = env_int("LOGIN_KNOWN_ADDRESSES_MAX", 10)
if LOGIN_KNOWN_ADDRESS_DAYS < 0 or LOGIN_KNOWN_ADDRESSES_MAX < 0:
    raise ImproperlyConfigured("LOGIN_KNOWN_ADDRESS_DAYS and LOGIN_KNOWN_ADDRESSES_MAX are >= 0.")
# After a failure of the cache's Redis the throttles, and authentication's user facts, skip it
# for this many seconds.
THROTTLE_REDIS_BACKOFF = env_float("THROTTLE_REDIS_BACKOFF", 5)
# What authentication keeps of a user in the cache's Redis (accounts/user_facts.py) lives this
# many seconds from the database read it came from: long enough that a sale's clicks find it
# (a change of the user forgets it at once; decision 1015).
USER_FACTS_TTL = env_float("USER_FACTS_TTL", 900)
# A lookup that missed writes the facts back only within this many seconds of its lease.
USER_FACTS_LEASE = env_float("USER_FACTS_LEASE", 10)
if not 0 < USER_FACTS_LEASE <= 20 or USER_FACTS_TTL < USER_FACTS_LEASE:
    raise ImproperlyConfigured(
        "USER_FACTS_LEASE must be above 0 and at most 20 seconds, USER_FACTS_TTL at least that."
    )

# --- Auth -------------------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=env_int("JWT_ACCESS_MINUTES", 15)),
    "REFRESH_TOKEN_LIFETIME": timedelta(days=env_int("JWT_REFRESH_DAYS", 7)),
    "AUTH_HEADER_TYPES": ("Bearer",),
    "UPDATE_LAST_LOGIN": False,
    # Every refresh returns a new refresh token and blacklists the one presented.
    "ROTATE_REFRESH_TOKENS": True,
    "BLACKLIST_AFTER_ROTATION": True,
    # A digest of the password hash in every token: a password change revokes them all
    # (accounts/authentication.py compares it with the user row it loads anyway).
    "CHECK_REVOKE_TOKEN": True,
}

# --- REST framework and API docs --------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.RevocableJWTAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.RememberedNegotiation",
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "PAGE_SIZE": 20,
    # Trusted reverse proxies in front of the app (1 behind the shipped nginx): the client IP
    # the throttles count is then the one the nearest proxy appended to X-Forwarded-For. 0
    # (the default): the socket's address, and X-Forwarded-For, which any client can write
    # when it reaches the server directly, is ignored.
    "NUM_PROXIES": env_int("NUM_PROXIES", 0),
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Coupons API",
    "DESCRIPTION": "Store-wide coupons: templates, claims, my coupons, orders.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Served from our own static files: the docs work without internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request and response shapes as separate components, so read-only fields (ids, tokens
    # handed out) are required in answers and absent from what a client sends.
    "COMPONENT_SPLIT_REQUEST": True,
    # The Swagger UI keeps the Bearer token across page reloads.
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True, "displayOperationId": True},
    # Ids in paths (api.converters.IdConverter): integers in the schema, as in the URL regex.
    "PATH_CONVERTER_OVERRIDES": {
        "id": {"type": "integer", "format": "int64", "minimum": 0, "maximum": MAX_ID}
    },
    "ENUM_NAME_OVERRIDES": {
        "OrderStatusEnum": "orders.models.Order.Status",
        "OrderTypeEnum": "orders.models.Order.Type",
        "CouponTypeEnum": "coupons.models.CouponTemplate.Type",
        "CouponScopeEnum": "coupons.models.CouponTemplate.Scope",
        "CouponStatusEnum": "coupons.api.serializers.COUPON_STATUSES",
        "ShopperStateEnum": "coupons.api.serializers.SHOPPER_STATES",
    },
}

# --- Idempotency-Key (docs/decisions/0018-idempotency-keys-in-mysql.md) -----------------------

# How long a key's answer is kept for replays; SPEC section 12 asks for at least 24 hours.
IDEMPOTENCY_KEY_HOURS = env_int("IDEMPOTENCY_KEY_HOURS", 24)
if IDEMPOTENCY_KEY_HOURS < 24:
    raise ImproperlyConfigured("IDEMPOTENCY_KEY_HOURS must be at least 24.")
# A key whose request has no recorded answer after this long (it failed and its record could
# not be dropped, or it died) is free again. Longer than a command's request runs (one short
# transaction, each statement bounded by DB_READ_TIMEOUT and retried once at most), so a
# running request never loses its key.
IDEMPOTENCY_LEASE_SECONDS = env_int("IDEMPOTENCY_LEASE_SECONDS", 60)
if not 31 <= IDEMPOTENCY_LEASE_SECONDS <= 60:
    raise ImproperlyConfigured("IDEMPOTENCY_LEASE_SECONDS must be from 31 to 60.")

# --- Orders -----------------------------------------------------------------------------------

ORDER_PAYMENT_TIMEOUT_MINUTES = env_int("ORDER_PAYMENT_TIMEOUT_MINUTES", 15)
# Orders awaiting payment that one user may hold at once (each holds its stock until paid or
# expired); the next checkout is 409 `too_many_unpaid_orders`.
MAX_UNPAID_ORDERS = env_int("MAX_UNPAID_ORDERS", 5)
# Units of one product one order line may take (decision 0630): with MAX_UNPAID_ORDERS, what one
# user can hold unpaid. At most 999, the bound the database's CHECK keeps (orders/models.py).
ORDER_LINE_MAX_QUANTITY = env_int("ORDER_LINE_MAX_QUANTITY", 10)
if not 1 <= ORDER_LINE_MAX_QUANTITY <= 999:
    raise ImproperlyConfigured("ORDER_LINE_MAX_QUANTITY must be from 1 to 999.")

# --- I18n, time, static -----------------------------------------------------------------------

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
# Compiled by `make messages` (msgfmt): docs/decisions/0031-admin-money-time-languages.md.
LOCALE_PATHS = [BASE_DIR / "locale"]
# Times are stored in UTC and shown (admin, CSV export, chart days) in this zone.
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# Money is stored in integer cents and shown / entered in this currency (core/money.py).
COUPON_CURRENCY = env_str("COUPON_CURRENCY", "CNY")

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# Staff jobs' files (uploads and results: backoffice/staff_jobs/), served only through the
# job's page, which asks who may see them; never under a public URL. Every app server and
# worker must see the same folder (compose: one volume).
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured("LOG_FORMAT is plain or json.")
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    # LOG_FORMAT=json: one JSON object per line (production's default), for a log pipeline.
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {
        "request_id": {"()": "ops.log_filters.RequestIdLogFilter"},
        "database_outage": {"()": "ops.database_faults.DatabaseOutageLogFilter"},
        "without_traceback": {"()": "ops.log_filters.WithoutTraceback"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            # While the database is down: one line per kind of failure, no traceback flood.
            "filters": ["request_id", "database_outage"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # A 409 "sold out" is the normal answer to a flash crowd, not a server problem: log only
    # 5xx here (Django logs every 4xx as a warning by default).
    "loggers": {
        "django.request": {"level": "ERROR"},
        # A request for a Host we do not serve: one line naming it, answered 400.
        "django.security.DisallowedHost": {"filters": ["without_traceback"]},
    },
}

# --- Demo data -------------------------------------------------------------------------------

# `seed_demo` creates users whose password is in the README: only the local and test settings
# turn this on, so a production deployment (or any settings module of its own) refuses it.
DEMO_DATA_ALLOWED = False

# --- The operator's admin ---------------------------------------------------------------------

# The admin's look (decision 0900): django-simpleui, every file served from our static files,
# nothing reported anywhere, no check for a newer version; its home tab is the dashboard.
SIMPLEUI_STATIC_OFFLINE = True
SIMPLEUI_ANALYSIS = False
SIMPLEUI_HOME_INFO = False  # the card that links to simpleui's sites and looks for updates
SIMPLEUI_HOME_ACTION = False
SIMPLEUI_LOADING = False
SIMPLEUI_LOGIN_PARTICLES = False  # an animation that costs the CPU and says nothing
SIMPLEUI_HOME_PAGE = "/admin/dashboard/"
SIMPLEUI_HOME_TITLE = gettext_lazy("Dashboard")
SIMPLEUI_HOME_ICON = "fas fa-chart-line"
X_FRAME_OPTIONS = "SAMEORIGIN"
