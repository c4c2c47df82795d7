"""WSGI entry point for the app's server (config/serve.py) and the bench's: the API on its own
middleware chain (config/handlers.py), and the probes on a listener of their own in each
process that imports it (PROBE_BIND, decision 1032): a server's workers each import it."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402

from config.handlers import RoutedApplication  # noqa: E402  (needs the apps loaded)
from ops.probe_listener import ProbeListener  # noqa: E402

application = RoutedApplication()
if settings.PROBE_BIND:
    probes = ProbeListener(application, settings.PROBE_BIND)
