"""The base of every domain error. Nothing here knows about HTTP: api/exceptions.py maps
each stable `code` to a status in one table."""

from django.utils.translation import gettext_lazy as _


class DomainError(Exception):
    code = "error"
    # Lazy, so that each answer is rendered in its request's language (SPEC section 13).
    default_detail = _("The request could not be completed.")

    def __init__(self, detail: str | None = None, *, fields: dict[str, list[str]] | None = None):
        self.detail = detail or self.default_detail
        self.fields = fields
        super().__init__(self.detail)
