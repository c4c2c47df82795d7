"""Domain errors of the accounts package (api/exceptions.py maps each code to a status)."""

from django.utils.translation import gettext_lazy as _

from core.domain_errors import DomainError


class StaffActionRefused(DomainError):
    """A staff member without the permission an operation needs (backoffice/staff_actions.py)."""

    code = "permission_denied"
    default_detail = _("You do not have permission to perform this action.")
