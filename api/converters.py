"""URL converter for database ids: digits only and small enough for a signed BIGINT, so no id
in a URL can overflow a query (a longer one is simply an unknown URL, 404)."""

from core.limits import ID_REGEX


class IdConverter:
    regex = ID_REGEX

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
