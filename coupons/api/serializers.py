from rest_framework import serializers

from config.serializers import StrictSerializer
from coupons.models import CouponTemplate


class TemplateInputSerializer(StrictSerializer):
    """Parses types only; every rule about the values lives in services.template_terms_validate."""

    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    type = serializers.CharField()
    value = serializers.IntegerField()
    min_amount = serializers.IntegerField(default=0)
    total = serializers.IntegerField()
    per_user_limit = serializers.IntegerField(default=1)
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField()


class TemplateSerializer(serializers.ModelSerializer):
    class Meta:
        model = CouponTemplate
        fields = [
            "id",
            "name",
            "type",
            "value",
            "min_amount",
            "total",
            "per_user_limit",
            "valid_from",
            "valid_until",
            "claimed_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class AdminTemplateSerializer(TemplateSerializer):
    used_count = serializers.IntegerField(read_only=True)

    class Meta(TemplateSerializer.Meta):
        fields = [*TemplateSerializer.Meta.fields, "used_count"]
        read_only_fields = fields
