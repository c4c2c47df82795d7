from django.db import models


class MillisecondDateTimeField(models.DateTimeField):
    """DATETIME(3) on MySQL, as the schema asks. Values are truncated to the millisecond on
    every backend, so what is written is exactly what is read back and what Redis compares."""

    def db_type(self, connection):
        if connection.vendor == "mysql":
            return "datetime(3)"
        return super().db_type(connection)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is not None and hasattr(value, "microsecond"):
            value = value.replace(microsecond=value.microsecond // 1000 * 1000)
        return value
