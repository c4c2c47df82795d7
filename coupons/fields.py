import secrets
from datetime import datetime

from django.db import models

from core.clock import truncate_to_milliseconds


class MillisecondDateTimeField(models.DateTimeField):
    """DATETIME(3) on MySQL, as the schema asks. Values are truncated to the millisecond on
    every backend, so what is written is exactly what is read back and what Redis compares."""

    def db_type(self, connection):
        if connection.vendor == "mysql":
            return "datetime(3)"
        return super().db_type(connection)

    def pre_save(self, model_instance, add):
        # auto_now values too, so the saved instance shows what the database kept.
        value = super().pre_save(model_instance, add)
        if isinstance(value, datetime):
            value = truncate_to_milliseconds(value)
            setattr(model_instance, self.attname, value)
        return value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if isinstance(value, datetime):
            value = truncate_to_milliseconds(value)
        return value


def new_incarnation() -> str:
    """A fresh incarnation: 16 hex digits."""
    return secrets.token_hex(8)


class IncarnationField(models.CharField):
    """A random token given to a row when it is created (CouponTemplate.incarnation): the
    template's Redis counts are keyed by it too (coupons/issuing/counter.py), so a template id
    that a database restored from backup hands out again starts with none of the counts of
    the template that had it before (decision 0721)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("max_length", 16)
        kwargs.setdefault("default", new_incarnation)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)
