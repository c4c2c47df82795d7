"""{{ entry|audit_message }}: a LogEntry as backoffice/audit_messages.py words it."""

from django import template
from django.contrib.admin.models import LogEntry

from backoffice import audit_messages

register = template.Library()


@register.filter
def audit_message(entry: LogEntry) -> str:
    return audit_messages.audit_message(entry)
