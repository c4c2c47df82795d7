"""Logging filters that keep noise that anyone on the internet can cause to one line."""

import logging


class WithoutTraceback(logging.Filter):
    """Drop the traceback of a record whose cause is the client, not our code: for example
    `django.security.DisallowedHost`, which every request for a Host the site does not serve
    logs (1.1 KB of traceback each, SPEC section 19). The message names the Host."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True
