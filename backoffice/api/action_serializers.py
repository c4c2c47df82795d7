"""The admin API's action serializers: grants (SPEC section 17) and single-use codes (SPEC
section 18); the templates' own are backoffice/api/template_serializers.py."""

from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from api.serializers import StrictSerializer
from core.limits import MAX_BIGINT
from coupons.grant_reasons import GRANT_REASON_MAX_LENGTH
from coupons.models.single_use_codes import (
    MAX_SINGLE_USE_CODES_PER_REQUEST,
    SingleUseCode,
)
from coupons.services import grants


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "Three users (alice, bob and an unknown id)",
            request_only=True,
            value={"user_ids": [2, 3, 999], "reason": "快递延误补偿"},
        )
    ]
)
class GrantInputSerializer(StrictSerializer):
    """Types and sizes; the reason's trimmed length is checked by grants.coupon_grant."""

    user_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_BIGINT),
        min_length=1,
        max_length=grants.MAX_GRANT_USERS,
    )
    reason = serializers.CharField(max_length=GRANT_REASON_MAX_LENGTH)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "One granted and two not (the demo's template 8: bob holds one already)",
            response_only=True,
            value={
                "granted": [2],
                "limit_reached": [3],
                "sold_out": [],
                "unknown_user": [999],
                "already_granted": [],
                "ended": [],
                "paused": [],
                "not_eligible": [],
            },
        )
    ]
)
class GrantResultSerializer(serializers.Serializer):
    granted = serializers.ListField(child=serializers.IntegerField())
    limit_reached = serializers.ListField(child=serializers.IntegerField())
    sold_out = serializers.ListField(child=serializers.IntegerField())
    unknown_user = serializers.ListField(child=serializers.IntegerField())
    already_granted = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Granted this template for this reason before: nothing issued twice.",
    )
    ended = serializers.ListField(
        child=serializers.IntegerField(), help_text="The template ended during the grant."
    )
    paused = serializers.ListField(
        child=serializers.IntegerField(), help_text="The template was paused during the grant."
    )
    not_eligible = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="A new-customers template, and these users have paid for an order.",
    )


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "Ten thousand codes, the template stays in the shop",
            request_only=True,
            value={"count": 10000},
        ),
        OpenApiExample(
            "Codes only: the template leaves the shop",
            request_only=True,
            value={"count": 500, "codes_only": True},
        ),
    ]
)
class SingleUseCodesInputSerializer(StrictSerializer):
    """The types only; the range is checked by codes.single_use_codes_create (400 naming
    `count`)."""

    count = serializers.IntegerField(
        help_text=f"How many new codes to create, 1 to {MAX_SINGLE_USE_CODES_PER_REQUEST}."
    )
    codes_only = serializers.BooleanField(
        default=False,
        help_text="true: from now on the template is issued only by its single-use codes "
        "and by grants (it leaves the shop's list; a claim by id or by its shared code is "
        "404). false (the default): it keeps every way in it had, and the codes are one "
        "more. A codes-only template stays codes-only.",
    )


class MerchantCodesImportInputSerializer(StrictSerializer):
    """The types only; the file is read and checked by merchant_codes (400 naming `file`)."""

    file = serializers.FileField(
        help_text="A .csv (UTF-8, or GB18030 as Excel saves it) or .xlsx file whose first row "
        "names the codes' column (code or 券码); a code has 8 to 21 letters A-Z, digits and "
        "inner dashes, case aside. At most the request body limit (1 MiB)."
    )
    codes_only = serializers.BooleanField(
        default=False, help_text="As for created codes: true makes the template codes-only."
    )
    dry_run = serializers.BooleanField(
        default=False,
        help_text="true: check every row and answer 200 with how many codes would be "
        "imported (or 400 with the problems), importing nothing.",
    )


@extend_schema_serializer(
    examples=[
        OpenApiExample("Imported", response_only=True, value={"imported": 2, "codes_only": False})
    ]
)
class MerchantCodesImportedSerializer(serializers.Serializer):
    imported = serializers.IntegerField(help_text="Codes imported (with dry_run: importable).")
    codes_only = serializers.BooleanField(help_text="Whether the template is now codes-only.")


@extend_schema_serializer(
    examples=[
        OpenApiExample("Created", response_only=True, value={"created": 10000, "codes_only": False})
    ]
)
class SingleUseCodesCreatedSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    codes_only = serializers.BooleanField(help_text="Whether the template is now codes-only.")


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A used code",
            response_only=True,
            value={
                "id": 1,
                "code": "7KQ2MZ9XHR4T",
                "used_by": 2,
                "used_at": "2026-12-01T10:15:03.127000Z",
                "created_at": "2026-11-30T09:00:00.000000Z",
            },
        )
    ]
)
class SingleUseCodeSerializer(serializers.ModelSerializer):
    used_by = serializers.IntegerField(
        source="used_by_id", read_only=True, allow_null=True, help_text="The user who used it."
    )

    class Meta:
        model = SingleUseCode
        fields = ["id", "code", "used_by", "used_at", "created_at"]
        read_only_fields = fields
