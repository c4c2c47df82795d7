"""Errors of the Idempotency-Key handling. Each has a stable `code`; api/exceptions.py
gives it a status."""

from django.utils.translation import gettext_lazy as _

from core.domain_errors import DomainError


class IdempotencyKeyInvalid(DomainError):
    code = "invalid"
    default_detail = _("Invalid Idempotency-Key header.")


class IdempotencyKeyReused(DomainError):
    code = "idempotency_key_reused"
    default_detail = _(
        "This Idempotency-Key was already used for a different request (method, path or body)."
    )


class RequestInProgress(DomainError):
    code = "request_in_progress"
    default_detail = _(
        "A request with this Idempotency-Key is still running; retry once it has answered."
    )
