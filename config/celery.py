"""The Celery app that runs the background work (docs/decisions/1024-background-work-on-celery.md):
`celery -A config worker` (with `-B` for the periodic jobs in the same process, as `make run`
does) or `celery -A config beat` beside workers (compose). Its settings are Django's, under
CELERY_ (config/settings/base.py); the tasks are each app's `tasks.py`, found by name."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("coupons")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
