"""Logging filters: the request id on every line, and noise that anyone on the internet can
cause kept to one line."""

import contextvars
import logging

# The id of the request being served (ops/vitals.py sets it); `-` outside a request.
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdLogFilter(logging.Filter):
    """Puts the current request's id on every log record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class WithoutTraceback(logging.Filter):
    """Drop the traceback of a record whose cause is the client, not our code: for example
    `django.security.DisallowedHost`, which every request for a Host the site does not serve
    logs (1.1 KB of traceback each, SPEC section 19). The message names the Host."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True
