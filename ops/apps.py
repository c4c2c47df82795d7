from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Staying up, as an app for its management command (run_scheduler). No models."""

    name = "ops"
