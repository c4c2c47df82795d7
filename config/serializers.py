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
