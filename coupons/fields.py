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
