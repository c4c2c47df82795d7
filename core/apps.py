from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Cross-cutting pieces every API app uses; today the Idempotency-Key records."""

    name = "core"
