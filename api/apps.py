from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The API plumbing as an app, for the Idempotency-Key records. The label stays "core"
    (where the records lived before), so the migration history and the table
    core_idempotencyrecord are unchanged."""

    name = "api"
    label = "core"
