from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Who is calling: its signal receivers (token revocation) and the users' token
    generations (accounts.models)."""

    name = "accounts"

    def ready(self) -> None:
        from accounts import token_revocation  # noqa: F401  (connects the receivers)
