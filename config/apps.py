from django.apps import AppConfig


class PlatformConfig(AppConfig):
    """The config package as an app, for its signal receivers (token revocation)."""

    name = "config"
    label = "platform"

    def ready(self) -> None:
        from config import token_revocation  # noqa: F401  (connects the receivers)
