from django.utils.dateparse import parse_datetime
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """An input serializer that refuses fields it does not know, instead of ignoring them,
    so a typo in a request is a 400 naming the field rather than a silently lost value."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({field: ["Unknown field."] for field in unknown})
        return super().to_internal_value(data)


class StringField(serializers.CharField):
    """A CharField that takes only a JSON string (DRF's also turns numbers into strings)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with a UTC offset, as the API promises; a naive time is a 400, not a guess."""

    default_error_messages = {"naive": "Include a UTC offset, e.g. 2026-06-01T00:00:00+08:00."}

    def to_internal_value(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:  # well-formed but impossible: 12:99, February 30, +25:00
                self.fail("invalid", format="ISO 8601 with a UTC offset")
            if parsed is not None and parsed.tzinfo is None:
                self.fail("naive")
        return super().to_internal_value(value)
