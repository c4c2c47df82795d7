"""The task queue as the team on call sees it (decision 1024), gathered at each scrape of
/metrics: how many messages wait in the queue and how many workers consume it, from RabbitMQ
(one passive declare on a connection of the scrape's own, bounded to 2 s); and each collector
the apps name in METRICS_COLLECTORS (the events' outbox: coupons/auto_issue/vitals.py), which
ops does not import."""

import logging

from celery import current_app
from django.conf import settings
from django.utils.module_loading import import_string
from prometheus_client.core import GaugeMetricFamily

logger = logging.getLogger(__name__)
BROKER_TIMEOUT_SECONDS = 2


class TaskQueueCollector:
    def collect(self):
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        up = GaugeMetricFamily(
            "coupons_task_broker_up", "Whether the task queue's broker answered this scrape."
        )
        try:
            waiting, consuming = _queue_depth(queue)
        except Exception as error:  # the broker away: its gauge says so, the scrape goes on
            logger.info("task queue not read at this scrape: %r", error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        messages = GaugeMetricFamily(
            "coupons_task_queue_messages", "Messages waiting in the queue.", labels=["queue"]
        )
        messages.add_metric([queue], waiting)
        yield messages
        workers = GaugeMetricFamily(
            "coupons_task_queue_workers", "Workers consuming the queue.", labels=["queue"]
        )
        workers.add_metric([queue], consuming)
        yield workers


def _queue_depth(queue: str) -> tuple[int, int]:
    """(messages waiting, consumers) of the queue; (0, 0) for one no worker declared yet."""
    with current_app.connection_for_read(
        settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS
    ) as connection:
        connection.ensure_connection(max_retries=1)
        try:
            # py-amqp's channel answers with the counts; kombu's stubs type only its abstract one
            channel = connection.default_channel
            declared = channel.queue_declare(queue=queue, passive=True)  # type: ignore[attr-defined]
        except connection.channel_errors:  # NOT_FOUND: no worker ever declared it
            return 0, 0
        return declared.message_count, declared.consumer_count


def app_collectors() -> list:
    """METRICS_COLLECTORS: dotted paths of collector classes, each made once per scrape."""
    return [import_string(path)() for path in settings.METRICS_COLLECTORS]
