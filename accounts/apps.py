from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Who is calling, as an app for its signal receivers (token revocation). No models."""

    name = "accounts"

    def ready(self) -> None:
        from accounts import token_revocation  # noqa: F401  (connects the receivers)
