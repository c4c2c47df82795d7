"""The back office's hand inside a service (decision 1017). A staff action is asked and
recorded in the transaction of the service that does it, so a refused action changes nothing
and a done one is recorded exactly once, with what it did, or not at all. The services stand
below the back office and cannot import its permission table: the door that calls a service
passes it the audit of the action it is doing (backoffice/staff_actions.py builds it), and the
service calls `check()` before it changes anything and `record()` inside its transaction."""

from collections.abc import Mapping
from typing import Any, Protocol

from django.db.models import Model


class StaffAudit(Protocol):
    """One staff action by one staff member, as the back office asks and records it."""

    def check(self) -> None:
        """Raise a DomainError (403) unless the staff member may do the action."""

    def record(self, target: Model | type[Model], amounts: Mapping[str, Any] | None = None) -> None:
        """Record the action on `target` (an object, or a model for an action on many) with its
        amounts. The first record of a target writes its entry; another record of the same
        target (a grant's next batch) brings that entry up to date."""


class NotStaff:
    """No staff member: seed data, jobs, a shopper's own request and tests that call a service
    directly. Nothing is checked or recorded."""

    def check(self) -> None:
        return None

    def record(self, target: Model | type[Model], amounts: Mapping[str, Any] | None = None) -> None:
        return None


NOT_STAFF: StaffAudit = NotStaff()
