"""DRF pagination for every list: page and page_size are validated, and a page past the end
is an empty page, not an error."""

from django.core.paginator import EmptyPage, Page
from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.utils.urls import replace_query_param

MAX_QUERY_INT = 999_999_999  # nine digits, as positive_query_int accepts


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 50

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        page_size = positive_query_int(request, self.page_size_query_param, self.page_size)
        number = positive_query_int(request, self.page_query_param, 1)
        paginator = self.django_paginator_class(queryset, min(page_size, self.max_page_size))
        try:
            self.page = paginator.page(number)
        except EmptyPage:
            self.page = Page([], number, paginator)
        return list(self.page)

    def get_paginated_response_schema(self, schema: dict) -> dict:
        """Every page has all four keys; next and previous are null at the ends."""
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {
            "type": "object",
            "required": ["count", "next", "previous", "results"],
            "properties": {
                # The examples show one page holding everything (no link to follow that
                # would name another list than the operation's own).
                "count": {"type": "integer", "minimum": 0, "example": 1},
                "next": {**link, "example": None},
                "previous": {**link, "example": None},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view) -> list[dict]:
        number = {"type": "integer", "minimum": 1, "maximum": MAX_QUERY_INT}
        return [
            {
                "name": self.page_query_param,
                "in": "query",
                "required": False,
                "description": "Page number, from 1; past the last page the page is empty.",
                "schema": number,
            },
            {
                "name": self.page_size_query_param,
                "in": "query",
                "required": False,
                "description": f"Items per page (default {self.page_size}, at most "
                f"{self.max_page_size}: larger values give {self.max_page_size}).",
                "schema": number,
            },
        ]

    def get_next_link(self):
        return super().get_next_link() if self.page.object_list else None

    def get_previous_link(self):
        if self.page.object_list or self.page.number == 1:
            return super().get_previous_link()
        # Past the end: point back at the last page that has results.
        last = self.page.paginator.num_pages
        return replace_query_param(self.request.build_absolute_uri(), self.page_query_param, last)


def positive_query_int(request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    # isascii: str.isdigit() also accepts digits such as "²" that int() refuses.
    # len() first: int() of thousands of digits is refused by Python itself.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < 1:
        raise ValidationError({name: ["Must be a positive integer."]})
    return int(raw)
