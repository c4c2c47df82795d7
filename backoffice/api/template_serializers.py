"""The admin API's template serializers: what staff send to publish or edit a template (types
only: coupons/template_terms_rules.py holds the rules) and what they read back."""

from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api.serializers import AwareDateTimeField, StrictSerializer
from coupons.models import CouponTemplate
from coupons.services import templates


@extend_schema_field(serializers.ChoiceField(choices=CouponTemplate.Type.choices))
class TemplateTypeField(serializers.CharField):
    """A plain string to the parser (templates.template_terms_validate names a bad type); an
    enum in the schema."""


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A week of 10 off over 100",
            request_only=True,
            value={
                "name": "满100减10",
                "type": "threshold",
                "value": 1000,
                "min_amount": 10000,
                "total": 5000,
                "per_user_limit": 1,
                "valid_from": "2026-12-01T00:00:00+08:00",
                "valid_until": "2026-12-07T23:59:59+08:00",
            },
        )
    ]
)
class TemplateInputSerializer(StrictSerializer):
    """Parses types only; every rule about the values lives in templates.template_terms_validate."""

    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    type = TemplateTypeField()
    value = serializers.IntegerField()
    min_amount = serializers.IntegerField(default=0)
    total = serializers.IntegerField()
    per_user_limit = serializers.IntegerField(default=1)
    valid_from = AwareDateTimeField()
    valid_until = AwareDateTimeField()
    max_discount = serializers.IntegerField(allow_null=True, default=None)
    valid_days = serializers.IntegerField(allow_null=True, default=None)
    scope = serializers.CharField(default=CouponTemplate.Scope.ALL)
    scope_ids = serializers.ListField(child=serializers.IntegerField(), default=list)
    excluded_product_ids = serializers.ListField(
        child=serializers.IntegerField(),
        default=list,
        help_text="Products a store-wide or category coupon leaves out (no threshold, no "
        "discount on them); empty for a coupon of some products.",
    )
    excluded_category_ids = serializers.ListField(
        child=serializers.IntegerField(),
        default=list,
        help_text="Categories whose products a store-wide or category coupon leaves out.",
    )
    one_unit_only = serializers.BooleanField(
        default=False,
        help_text="true: the discount applies to one unit only, the cheapest eligible one.",
    )
    code = serializers.CharField(allow_null=True, default=None, trim_whitespace=False)
    visibility = serializers.CharField(default=CouponTemplate.Visibility.PUBLIC)
    audience = serializers.CharField(
        default=CouponTemplate.Audience.ALL,
        help_text="`all`, or `new_customers`: only users who have never paid for an order.",
    )
    auto_issue = serializers.CharField(
        default=CouponTemplate.AutoIssue.NONE,
        help_text="`none`; `signup`: issued to each new account; `paid_order`: issued to the "
        "buyer of each order paid with at least `auto_issue_min_pay` (once per order, taken "
        "back unused if the order is refunded). Within total, per-user limit, window, pause.",
    )
    auto_issue_min_pay = serializers.IntegerField(
        default=0, help_text="Cents: the least paid amount that earns it (paid_order only)."
    )


class TemplateSerializer(serializers.ModelSerializer):
    class Meta:
        model = CouponTemplate
        fields = ["id", *templates.TEMPLATE_TERMS, "claimed_count", "created_at", "updated_at"]
        read_only_fields = fields


class CampaignNamedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A coupon behind a code, 7 days from its claim (the demo's template 6)",
            response_only=True,
            value={
                "id": 6,
                "name": "新人礼：立减10元，领取后7天有效（券码 WELCOME7）",
                "type": "direct",
                "value": 1000,
                "min_amount": 0,
                "total": 100,
                "per_user_limit": 1,
                "valid_from": "2026-12-01T00:00:00+08:00",
                "valid_until": "2026-12-31T00:00:00+08:00",
                "max_discount": None,
                "valid_days": 7,
                "scope": "all",
                "scope_ids": [],
                "excluded_product_ids": [],
                "excluded_category_ids": [],
                "one_unit_only": False,
                "code": "WELCOME7",
                "visibility": "public",
                "audience": "all",
                "auto_issue": "none",
                "auto_issue_min_pay": 0,
                "claimed_count": 0,
                "created_at": "2026-11-30T09:00:00.000000Z",
                "updated_at": "2026-11-30T09:00:00.000000Z",
                "used_count": 0,
                "paused_at": None,
                "has_single_use_codes": False,
                "campaign": None,
            },
        )
    ]
)
class AdminTemplateSerializer(TemplateSerializer):
    used_count = serializers.IntegerField(read_only=True)
    campaign = serializers.SerializerMethodField(
        help_text="The campaign whose budget its discounts draw on (SPEC section 27); null: "
        "none. Set through the campaigns' endpoints."
    )
    paused_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="Since when the template is paused (it issues nothing); null: not paused.",
    )
    has_single_use_codes = serializers.BooleanField(
        read_only=True,
        help_text="Issued only by its single-use codes or by grants, not claimable by id.",
    )

    class Meta(TemplateSerializer.Meta):
        fields = [
            *TemplateSerializer.Meta.fields,
            "used_count",
            "paused_at",
            "has_single_use_codes",
            "campaign",
        ]
        read_only_fields = fields

    @extend_schema_field(CampaignNamedSerializer(allow_null=True))
    def get_campaign(self, template: CouponTemplate) -> dict | None:
        campaign = template.campaign
        return None if campaign is None else {"id": campaign.pk, "name": campaign.name}
