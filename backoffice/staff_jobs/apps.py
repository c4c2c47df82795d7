from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class StaffJobsConfig(AppConfig):
    """The back office's long work and its one table (the back office itself owns none)."""

    name = "backoffice.staff_jobs"
    label = "staff_jobs"
    verbose_name = _("Staff jobs")
    default_auto_field = "django.db.models.BigAutoField"
