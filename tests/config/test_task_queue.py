"""Background work on Celery and RabbitMQ (decision 1024): a real worker with beat in it, on the
machine's RabbitMQ (a queue of the test's own), issues what an event earned exactly once and
runs the periodic work; the relay sends each due outbox row once per lease, and a message
delivered twice, or late, issues nothing twice."""

import os
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from config.celery import app
from core import clock
from coupons.auto_issue.jobs import auto_issue_relay, auto_issue_taken
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.auto_issue import AutoIssueTask
from localservers.ports import free_port
from localservers.waiting import wait_until
from orders import services
from orders.models import Order
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserFactory
from tests.support.metrics import scrape

ROOT = Path(__file__).resolve().parents[2]
SIGNUP = CouponTemplate.AutoIssue.SIGNUP
WORKER_START_SECONDS = 180


def new_account(name: str):
    """An account created as every door creates one: it earns the sign-up coupons."""
    return get_user_model().objects.create_user(name, password="pass-word-123")


@pytest.mark.django_db
def test_the_relay_sends_each_due_row_once_per_lease():
    CouponTemplateFactory(auto_issue=SIGNUP, visibility="hidden", total=10)
    new_account("first")
    new_account("second")
    sent: list[tuple[int, int]] = []

    auto_issue_relay(lambda task_id, attempt: sent.append((task_id, attempt)))
    auto_issue_relay(lambda task_id, attempt: sent.append((task_id, attempt)))  # leased now

    assert sorted(sent) == sorted((task.pk, 1) for task in AutoIssueTask.objects.all())
    assert not UserCoupon.objects.exists()  # sending issues nothing: the worker does


@pytest.mark.django_db
def test_a_message_delivered_twice_or_late_issues_nothing_twice():
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, visibility="hidden", total=10)
    user = new_account("newcomer")
    sent: list[tuple[int, int]] = []
    auto_issue_relay(lambda task_id, attempt: sent.append((task_id, attempt)))
    [(task_id, attempt)] = sent

    first = auto_issue_taken(task_id, attempt)
    again = auto_issue_taken(task_id, attempt)  # a worker killed before it acknowledged
    stale = auto_issue_taken(task_id, attempt - 1)  # from a lease long over

    assert (first, again, stale) == ("issued", None, None)
    assert UserCoupon.objects.filter(user=user, template=welcome).count() == 1


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)  # the worker reads what the test committed
def test_a_worker_with_beat_issues_an_earned_coupon_once_and_runs_the_periodic_work(
    tmp_path, settings
):
    welcome = CouponTemplateFactory(auto_issue=SIGNUP, visibility="hidden", total=10)
    user = new_account("newcomer")
    buyer, product = UserFactory(), ProductFactory(stock=5)
    order = services.order_checkout(
        user_id=buyer.pk, items=[{"product_id": product.pk, "quantity": 2}]
    )
    Order.objects.filter(pk=order.pk).update(expire_at=clock.now() - timedelta(seconds=1))
    queue = f"test-{uuid.uuid4().hex[:12]}"  # RabbitMQ is shared: a queue of the test's own
    database = django_settings.DATABASES["default"]
    worker = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-B",
            "--concurrency", "1", "--loglevel", "INFO", "--schedule", str(tmp_path / "beat"),
            # A node name of its own: two workers named alike on one broker (another suite's,
            # a served app's) fight over the node's control queue and one exits at start.
            "--hostname", f"{queue}@%h",
        ],
        cwd=ROOT,
        env=os.environ | {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": f"mysql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 3306}/{database['NAME']}",
            "CELERY_QUEUE": queue,
        },
        stdout=(tmp_path / "worker.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    log = tmp_path / "worker.log"

    def waited(condition, *, timeout: float, what: str) -> None:
        """wait_until, with the worker's log in the failure (it failed once, log lost)."""
        try:
            wait_until(condition, timeout=timeout, what=what)
        except TimeoutError as late:
            raise AssertionError(f"{late}; the worker's log:\n{log.read_text()[-4000:]}") from None

    def started() -> bool:
        if worker.poll() is not None:
            raise AssertionError(f"the worker exited: {log.read_text()[-4000:]}")
        return b" ready." in log.read_bytes()

    try:
        # A loaded machine may take long to start a worker: the work is timed from its start.
        waited(started, timeout=WORKER_START_SECONDS, what="the worker (with beat) to start")
        # beat sends the relay every 2 s; the relay sends the row; the worker issues it
        waited(
            lambda: UserCoupon.objects.filter(user=user, template=welcome).exists(),
            timeout=60,
            what="the worker to issue the sign-up coupon",
        )
        # order expiry runs every 20 s by beat: sent now, as beat would, to the same queue
        app.send_task("orders.expire_overdue_orders", queue=queue)
        waited(
            lambda: Order.objects.get(pk=order.pk).status == Order.Status.CANCELLED,
            timeout=60,
            what="the worker to cancel the overdue order",
        )
        settings.CELERY_TASK_DEFAULT_QUEUE = queue
        served = scrape(settings)
        assert served[("coupons_task_broker_up", ())] == 1
        assert served[("coupons_task_queue_workers", (("queue", queue),))] >= 1
        assert served[("coupons_auto_issue_pending", ())] == 0
        os.killpg(worker.pid, signal.SIGTERM)  # a warm shutdown: the task in hand finishes
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        with app.connection_for_write() as connection:
            connection.default_channel.queue_delete(queue)

    assert UserCoupon.objects.filter(user=user, template=welcome).count() == 1
    assert AutoIssueTask.objects.get(user=user).state == AutoIssueTask.State.ISSUED
    product.refresh_from_db()
    assert product.stock == 5


@pytest.mark.django_db
def test_a_broker_away_is_a_gauge_and_the_scrape_still_answers(settings):
    """/metrics answers with the broker down (its gauge 0), within the broker's bound."""
    settings.CELERY_BROKER_URL = f"amqp://guest:guest@127.0.0.1:{free_port()}//"

    served = scrape(settings)

    assert served[("coupons_task_broker_up", ())] == 0
    assert ("coupons_task_queue_workers", (("queue", settings.CELERY_TASK_DEFAULT_QUEUE),)) not in (
        served
    )
