"""What starting or running a staff job can refuse (core/domain_errors.py)."""

from django.utils.translation import gettext_lazy as _

from core.domain_errors import DomainError


class StaffJobBusy(DomainError):
    code = "job_busy"
    default_detail = _(
        "The same work on this template is waiting or running; watch it on its page, or wait "
        "until it is done."
    )
