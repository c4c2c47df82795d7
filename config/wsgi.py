"""WSGI entry point for gunicorn and granian: the API on its own middleware chain
(config/handlers.py)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup(set_prefix=False)

from config.handlers import RoutedApplication  # noqa: E402  (needs the apps loaded)

application = RoutedApplication()
