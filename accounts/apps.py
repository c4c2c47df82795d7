from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    """Who is calling: its signal receivers (token revocation) and the users' token
    generations (accounts.models)."""

    name = "accounts"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        from accounts import token_revocation  # noqa: F401  (connects the receivers)
