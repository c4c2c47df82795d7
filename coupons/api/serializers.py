from datetime import datetime
from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api.serializers import StrictSerializer
from coupons import selectors
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.templates import CODE_PATTERN
from coupons.rules import ClaimState
from coupons.terms import SHOPPER_TERMS

if TYPE_CHECKING:
    from coupons.selectors import ShopperTemplate

# The values of the API's enums (the schema names them in SPECTACULAR_SETTINGS).
SHOPPER_STATES = tuple(state.value for state in ClaimState if state is not ClaimState.ACTIVE)
COUPON_STATUSES = selectors.MINE_STATUSES


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "50 off kitchen products over 250 (the demo's template 12)",
            response_only=True,
            value={
                "id": 12,
                "name": "厨具满250减50",
                "type": "threshold",
                "value": 5000,
                "min_amount": 25000,
                "total": 100,
                "per_user_limit": 1,
                "valid_from": "2026-11-30T09:00:00Z",
                "valid_until": "2026-12-31T09:00:00Z",
                "max_discount": None,
                "valid_days": None,
                "scope": "categories",
                "scope_ids": [1],
                "excluded_product_ids": [],
                "excluded_category_ids": [],
                "one_unit_only": False,
                "audience": "all",
                "claimed_count": 0,
                "claimed_by_me": 0,
                "state": "claimable",
            },
        )
    ]
)
class ShopperTemplateSerializer(serializers.ModelSerializer):
    """A template as a shopper sees it; `state` needs the page's `now` in the context."""

    claimed_by_me = serializers.IntegerField(read_only=True)
    state = serializers.SerializerMethodField()

    class Meta:
        model = CouponTemplate
        fields = [
            "id",
            *SHOPPER_TERMS,
            "claimed_count",
            "claimed_by_me",
            "state",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=SHOPPER_STATES))
    def get_state(self, template: "ShopperTemplate") -> str:
        return selectors.shopper_state(
            template,
            claimed_by_me=template.claimed_by_me,
            has_paid_order=self.context.get("has_paid_order"),
            now=self.context["now"],
        )


# Plain serializers for the hot responses (claim, my coupons): a ModelSerializer introspects
# the model on every instantiation, about 0.5 ms per claim response on this machine.


class TemplateTermsSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    type = serializers.ChoiceField(choices=CouponTemplate.Type.choices, read_only=True)
    value = serializers.IntegerField(read_only=True)
    min_amount = serializers.IntegerField(read_only=True)
    max_discount = serializers.IntegerField(read_only=True, allow_null=True)
    scope = serializers.ChoiceField(choices=CouponTemplate.Scope.choices, read_only=True)
    scope_ids = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    excluded_product_ids = serializers.ListField(
        child=serializers.IntegerField(), read_only=True, help_text="Never discounted."
    )
    excluded_category_ids = serializers.ListField(
        child=serializers.IntegerField(), read_only=True, help_text="Never discounted."
    )
    one_unit_only = serializers.BooleanField(
        read_only=True, help_text="The discount applies to the cheapest eligible unit only."
    )
    valid_from = serializers.DateTimeField(read_only=True, help_text="The claim window.")
    valid_until = serializers.DateTimeField(read_only=True)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A claimed coupon (alice's of the demo's template 1)",
            response_only=True,
            value={
                "id": 2,
                "user_id": 2,
                "template_id": 1,
                "status": "unused",
                "used_at": None,
                # The coupon's own use window: the template's (with valid_days, N days from
                # the claim).
                "valid_from": "2026-11-30T10:15:03.127000Z",
                "valid_until": "2026-12-31T10:15:03.127000Z",
                "source": "claim",
                "created_at": "2026-12-01T10:15:03.127000Z",
                "updated_at": "2026-12-01T10:15:03.127000Z",
                "template": {
                    "id": 1,
                    "name": "无门槛立减5元",
                    "type": "direct",
                    "value": 500,
                    "min_amount": 0,
                    "max_discount": None,
                    "scope": "all",
                    "scope_ids": [],
                    "excluded_product_ids": [],
                    "excluded_category_ids": [],
                    "one_unit_only": False,
                    "valid_from": "2026-11-30T10:15:03.127000Z",
                    "valid_until": "2026-12-31T10:15:03.127000Z",
                },
            },
        ),
        OpenApiExample(
            "A coupon for kitchen products (the demo's template 12, once bob claims it)",
            response_only=True,
            value={
                "id": 3,
                "user_id": 3,
                "template_id": 12,
                "status": "unused",
                "used_at": None,
                "valid_from": "2026-11-30T10:15:03.127000Z",
                "valid_until": "2026-12-31T10:15:03.127000Z",
                "source": "claim",
                "created_at": "2026-12-01T10:16:12.402000Z",
                "updated_at": "2026-12-01T10:16:12.402000Z",
                "template": {
                    "id": 12,
                    "name": "厨具满250减50",
                    "type": "threshold",
                    "value": 5000,
                    "min_amount": 25000,
                    "max_discount": None,
                    "scope": "categories",
                    "scope_ids": [1],
                    "excluded_product_ids": [],
                    "excluded_category_ids": [],
                    "one_unit_only": False,
                    "valid_from": "2026-11-30T10:15:03.127000Z",
                    "valid_until": "2026-12-31T10:15:03.127000Z",
                },
            },
        ),
    ]
)
class UserCouponSerializer(serializers.Serializer):
    """A user's coupon with its template's terms; `status` is derived with the context's
    `now` (expired is never stored)."""

    id = serializers.IntegerField(read_only=True)
    user_id = serializers.IntegerField(read_only=True)
    template_id = serializers.IntegerField(read_only=True)
    status = serializers.SerializerMethodField()
    used_at = serializers.DateTimeField(read_only=True, allow_null=True)
    valid_from = serializers.DateTimeField(
        read_only=True, help_text="The coupon's own use window, stamped when it was issued."
    )
    valid_until = serializers.DateTimeField(read_only=True)
    # DRF's metaclass takes declared fields off the class; the stubs see Field.source.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=UserCoupon.Source.choices, read_only=True
    )
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    template = TemplateTermsSerializer(read_only=True)

    @extend_schema_field(serializers.ChoiceField(choices=COUPON_STATUSES))
    def get_status(self, coupon: UserCoupon) -> str:
        return selectors.derived_status(coupon, now=self.context["now"])


# The claim's answer, built without a serializer: instantiating UserCouponSerializer deep-copies
# its fields, about 1 ms of CPU per claim on this machine against 0.05 ms for the dict below
# (docs/measurements/2026-11-30-claim-cpu-in-process.md). UserCouponSerializer stays the
# documented shape, and tests/coupons/issuing/test_claim.py holds the two equal. Datetimes go
# through DRF's own field.
_datetime = serializers.DateTimeField()


def user_coupon_data(coupon: UserCoupon, *, now: datetime) -> dict[str, Any]:
    """What UserCouponSerializer(coupon, context={"now": now}).data gives, quicker."""
    template = coupon.template
    return {
        "id": coupon.pk,
        "user_id": coupon.user_id,
        "template_id": coupon.template_id,
        "status": selectors.derived_status(coupon, now=now),
        "used_at": None if coupon.used_at is None else _datetime.to_representation(coupon.used_at),
        "valid_from": _datetime.to_representation(coupon.valid_from),
        "valid_until": _datetime.to_representation(coupon.valid_until),
        "source": coupon.source,
        "created_at": _datetime.to_representation(coupon.created_at),
        "updated_at": _datetime.to_representation(coupon.updated_at),
        "template": {
            "id": template.pk,
            "name": template.name,
            "type": template.type,
            "value": template.value,
            "min_amount": template.min_amount,
            "max_discount": template.max_discount,
            "scope": template.scope,
            "scope_ids": list(template.scope_ids),
            "excluded_product_ids": list(template.excluded_product_ids),
            "excluded_category_ids": list(template.excluded_category_ids),
            "one_unit_only": bool(template.one_unit_only),
            "valid_from": _datetime.to_representation(template.valid_from),
            "valid_until": _datetime.to_representation(template.valid_until),
        },
    }


class MineQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=selectors.MINE_STATUSES, required=False)
    page = serializers.CharField(required=False)  # checked by the paginator
    page_size = serializers.CharField(required=False)


@extend_schema_serializer(
    examples=[OpenApiExample("A code", request_only=True, value={"code": "WELCOME7"})]
)
class RedeemInputSerializer(StrictSerializer):
    code = serializers.RegexField(
        CODE_PATTERN,
        error_messages={"invalid": "A code is 4 to 32 characters of A-Z, a-z, 0-9, _ and -."},
    )
