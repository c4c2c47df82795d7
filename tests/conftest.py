import socket
import uuid
from urllib.parse import urlsplit

import MySQLdb
import pytest
import redis
from django.conf import settings
from django.utils import translation
from rest_framework.test import APIClient

from api.throttles import backoff as throttle_backoff
from api.throttles import in_process_counts, in_process_logs
from coupons.issuing.counter_setup import counter_from_settings, install_coupon_counter
from ops.database_faults import breaker as database_breaker
from ops.health import monitor as health_monitor
from tests.support.admin_users import EVERY_STAFF_PERMISSION, staff_with
from tests.support.caches import cache_settings
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import use_counter_at


def pytest_sessionstart(session):
    """Fail the whole run, with the fix, when MariaDB, Redis or RabbitMQ is not there: no test
    may be skipped for lack of a service."""
    database = settings.DATABASES["default"]
    problems = []
    if database["ENGINE"] != settings.MYSQL_ENGINE:
        problems.append(f"DATABASE_URL must point at MariaDB/MySQL, not {database['ENGINE']}.")
    else:
        try:
            MySQLdb.connect(
                host=database["HOST"] or "127.0.0.1",
                port=int(database["PORT"] or 3306),
                user=database["USER"],
                password=database["PASSWORD"] or "",
                connect_timeout=3,
            ).close()
        except MySQLdb.Error as error:
            problems.append(
                f"MariaDB at {database['HOST']}:{database['PORT']} is unreachable ({error}). "
                "Start it: start-stop-daemon --start --oknodo --background "
                "--exec /usr/sbin/mariadbd"
            )
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        problems.append(
            f"Redis at {settings.REDIS_URL} is unreachable ({error}). Start it: redis-server "
            '--daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no'
        )
    broker = urlsplit(settings.CELERY_BROKER_URL)
    try:
        socket.create_connection((broker.hostname, broker.port or 5672), timeout=3).close()
    except OSError as error:
        problems.append(
            f"RabbitMQ at {broker.hostname}:{broker.port or 5672} is unreachable ({error}). "
            "Start it: rabbitmq-server -detached"
        )
    if problems:
        pytest.exit("\n".join(["The test suite needs real services:", *problems]), returncode=3)


def pytest_configure(config):
    """Transactional tests (django_db(transaction=True)) commit for real, so their claims
    decide on the "decision" connection (a mirror of "default": the same test database) and
    may use it; TestCase tests wrap "default" in a transaction, so decisions there take a
    savepoint on it and the decision connection stays forbidden. The replica (another mirror,
    config/settings/test.py) is allowed where the decision is, for the routing tests."""
    from django.test import TestCase, TransactionTestCase

    from core.read_routing import REPLICA
    from coupons.issuing.transaction import DECISION_ALIAS

    TransactionTestCase.databases = {"default", DECISION_ALIAS, REPLICA}
    TestCase.databases = {"default"}


def pytest_collection_modifyitems(items):
    """A test that starts a redis-server of its own must carry the `servers` marker, so that
    `-m "not servers"` never starts one."""
    unmarked = [
        item.nodeid
        for item in items
        if "own_redis" in getattr(item, "fixturenames", ())
        and item.get_closest_marker("servers") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "These tests use own_redis without @pytest.mark.servers: " + ", ".join(unmarked)
        )


@pytest.fixture(autouse=True, scope="session")
def tasks_run_where_they_are_sent():
    """A task the app sends in this process (a staff job, once its transaction commits) runs
    here at once, never reaching a broker that a worker of another run might read; the tests
    of the worker and the queue start workers of their own, on queues of their own."""
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def language_of_the_test_thread():
    """A request in another language leaves it active in the thread (Django's LocaleMiddleware
    activates and never deactivates); each test starts in the default language."""
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def redis_namespace(settings):
    """Each test counts in its own key namespace on the shared Redis, so template ids reused
    across tests never meet stale counters: the app's counter is built for it. Its keys are
    deleted afterwards."""
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    settings.COUPON_REDIS_PREFIX = prefix
    settings.CACHES = cache_settings(settings.CACHES, key_prefix=prefix)  # throttle keys too
    throttle_backoff.reset()
    in_process_counts.reset()  # the throttles' Redis-outage counts, kept per process
    in_process_logs.reset()
    database_breaker.reset()
    health_monitor.reset()
    install_coupon_counter(counter_from_settings())
    shared_redis_url = settings.COUPON_COUNTER_REDIS_URL
    yield prefix
    install_coupon_counter(None)
    throttle_backoff.reset()
    client = redis.Redis.from_url(shared_redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def staff(db):
    """A staff member (not a superuser) holding every staff action's permissions."""
    return staff_with(*EVERY_STAFF_PERMISSION)


@pytest.fixture
def shopper_client(user) -> APIClient:
    return bearer_client(user)


@pytest.fixture
def staff_client(staff) -> APIClient:
    return bearer_client(staff)


@pytest.fixture
def admin_site(client, staff):
    """The Django test client logged in to the Django admin as a superuser."""
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


@pytest.fixture
def frozen_now(monkeypatch):
    """Freeze core.clock.now at a fixed instant; returns a setter to move it."""
    from datetime import UTC, datetime

    from core import clock

    state = {"now": datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)}
    monkeypatch.setattr(clock, "now", lambda: state["now"])

    def move_to(moment):
        state["now"] = moment
        return moment

    move_to.now = lambda: state["now"]
    return move_to


@pytest.fixture
def now(frozen_now):
    """The frozen instant the order flow's tests and the orders admin's run at."""
    return frozen_now.now()


@pytest.fixture
def own_redis(tmp_path, settings, redis_namespace):
    """A redis-server of this test's own, already serving as the app's Redis (REDIS_URL, the
    coupon counter, and the cache the throttles count in)."""
    from localservers.redis_server import RedisServer

    server = RedisServer(tmp_path)
    server.start()
    settings.REDIS_URL = settings.COUPON_COUNTER_REDIS_URL = server.url
    settings.CACHES = cache_settings(settings.CACHES, location=server.url)
    use_counter_at(server.url, prefix=redis_namespace)
    yield server
    server.stop()
