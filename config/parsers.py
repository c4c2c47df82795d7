"""The API's JSON parser: bounded in size and in nesting, so no body a client sends can cost
more than a 4xx."""

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

# Deeper than any request of this API needs (checkout is 3 levels), far below the interpreter's
# recursion limit that a deeper document would otherwise hit (a 500 before this parser).
MAX_JSON_DEPTH = 32


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "too_large"


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large() -> RequestTooLarge:
    return RequestTooLarge(f"Request body over {body_limit()} bytes.")


def json_depth(value: object) -> int:
    """How deeply lists and objects nest in a parsed document (a scalar is 0); iterative, so
    it cannot hit the recursion limit itself."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


class BoundedJSONParser(JSONParser):
    """JSONParser that reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes (413 `too_large`
    beyond, Content-Length or not) and refuses documents nested deeper than MAX_JSON_DEPTH."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = body_limit()
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise too_large()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(raw.decode(encoding))  # NaN and Infinity refused
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply.") from None
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError included
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
        if json_depth(data) > MAX_JSON_DEPTH:
            raise exceptions.ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels.")
        return data
