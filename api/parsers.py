"""The API's JSON parser: bounded in size and in nesting, so no body a client sends can cost
more than a 4xx."""

import re
from json import JSONDecodeError

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

# Deeper than any request of this API needs (checkout is 3 levels), far below the interpreter's
# recursion limit that a deeper document would otherwise hit (a 500 before this parser).
MAX_JSON_DEPTH = 32


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("Request body too large.")
    default_code = "too_large"


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large() -> RequestTooLarge:
    return RequestTooLarge(f"Request body over {body_limit()} bytes.")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_problem(value: object) -> str | None:
    """Why a parsed document cannot be used, or None: nesting deeper than MAX_JSON_DEPTH, or a
    string holding a lone UTF-16 surrogate (valid JSON as `\\ud800`, but no UTF-8 encoder,
    the database's included, can take it). Iterative, so it cannot hit the recursion limit."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                return "JSON strings must not contain lone surrogates."
            continue
        if isinstance(item, dict):
            children = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > MAX_JSON_DEPTH:
            return f"JSON nested deeper than {MAX_JSON_DEPTH} levels."
        stack.extend((child, depth + 1) for child in children)
    return None


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
            raise exceptions.ParseError(_("JSON nested too deeply.")) from None
        except JSONDecodeError as error:  # where, in the request's language
            raise exceptions.ParseError(
                _("JSON parse error at line %(line)d, column %(column)d.")
                % {"line": error.lineno, "column": error.colno}
            ) from None
        except ValueError:  # UnicodeDecodeError
            raise exceptions.ParseError(
                _("The body is not %(encoding)s text.") % {"encoding": encoding.upper()}
            ) from None
        problem = json_problem(data)
        if problem is not None:
            raise exceptions.ParseError(problem)
        return data
