from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BackofficeConfig(AppConfig):
    """Staff work: the admin, the staff API, the grant command, the permission table, the audit
    trail, the dashboard and the reports. It stands above coupons and orders (it reads both)
    and owns no table of its own: the audit trail is Django's admin log."""

    name = "backoffice"
    verbose_name = _("Back office")
