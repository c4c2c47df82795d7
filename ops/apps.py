from django.apps import AppConfig
from django.db.backends.signals import connection_created

from core.metrics import timed_statement


class OpsConfig(AppConfig):
    """Staying up, as an app for its management command (run_scheduler). No models."""

    name = "ops"

    def ready(self) -> None:
        connection_created.connect(time_statements, dispatch_uid="ops.time_statements")


def time_statements(sender, connection, **kwargs) -> None:
    """Every database connection times its statements for /metrics (core/metrics.py); a
    connection opened again keeps the one wrapper it has."""
    if timed_statement not in connection.execute_wrappers:
        connection.execute_wrappers.append(timed_statement)
