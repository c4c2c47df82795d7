# The Celery app is loaded with Django, so each app's @shared_task binds to it.
from config.celery import app as celery_app

__all__ = ["celery_app"]
