from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from api.serializers import StrictSerializer
from core.limits import MAX_BIGINT
from coupons.ports import COUPON_SCOPE_CHOICES, COUPON_TYPE_CHOICES
from orders.models import (
    Category,
    Order,
    OrderItem,
    Product,
)
from orders.selectors import OptionReason

# Input serializers parse types and storage bounds only; the order rules (line count,
# quantities, one line per product) live in orders.services, which seckill shares.


class OrderLineInputSerializer(StrictSerializer):
    product_id = serializers.IntegerField(min_value=1, max_value=MAX_BIGINT)
    quantity = serializers.IntegerField(min_value=-MAX_BIGINT, max_value=MAX_BIGINT)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "Two lines and a coupon",
            request_only=True,
            value={
                "items": [{"product_id": 1, "quantity": 2}, {"product_id": 4, "quantity": 1}],
                "coupon_id": 2,
            },
        )
    ]
)
class CheckoutInputSerializer(StrictSerializer):
    items = OrderLineInputSerializer(many=True, allow_empty=True)
    coupon_id = serializers.IntegerField(
        min_value=1, max_value=MAX_BIGINT, required=False, allow_null=True, default=None
    )


@extend_schema_serializer(
    examples=[OpenApiExample("The order's pay_amount", request_only=True, value={"amount": 20800})]
)
class PayInputSerializer(StrictSerializer):
    amount = serializers.IntegerField(min_value=0, max_value=MAX_BIGINT)


class CouponOptionsQuerySerializer(StrictSerializer):
    amount = serializers.IntegerField(min_value=0, max_value=MAX_BIGINT)
    page = serializers.CharField(required=False)  # checked by the paginator
    page_size = serializers.CharField(required=False)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "Two lines",
            request_only=True,
            value={"items": [{"product_id": 1, "quantity": 2}, {"product_id": 4, "quantity": 1}]},
        )
    ]
)
class CouponOptionsCartInputSerializer(StrictSerializer):
    items = OrderLineInputSerializer(many=True, allow_empty=True)


class OrderItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = OrderItem
        fields = [
            "id",
            "product_id",
            "title",
            "unit_price",
            "quantity",
            "discount_amount",
            "refunded_quantity",
        ]
        read_only_fields = fields


ORDER_EXAMPLE: dict[str, Any] = {
    "id": 1,
    "user_id": 2,
    "order_type": "normal",
    "status": "pending_payment",
    "total_amount": 21300,
    "discount_amount": 500,
    "pay_amount": 20800,
    "coupon_id": 2,
    # The coupon's 500 shared over the lines in its scope, by value.
    "items": [
        {
            "id": 1,
            "product_id": 1,
            "title": "茶具套装",
            "unit_price": 9900,
            "quantity": 2,
            "discount_amount": 465,
            "refunded_quantity": 0,
        },
        {
            "id": 2,
            "product_id": 4,
            "title": "筷子",
            "unit_price": 1500,
            "quantity": 1,
            "discount_amount": 35,
            "refunded_quantity": 0,
        },
    ],
    "expire_at": "2026-12-01T10:30:03.127000Z",
    "paid_at": None,
    "cancelled_at": None,
    "refunded_at": None,
    "refunded_amount": 0,
    "created_at": "2026-12-01T10:15:03.127000Z",
    "updated_at": "2026-12-01T10:15:03.127000Z",
}


@extend_schema_serializer(
    examples=[OpenApiExample("An order awaiting payment", response_only=True, value=ORDER_EXAMPLE)]
)
class OrderSerializer(serializers.ModelSerializer):
    items = OrderItemSerializer(many=True, read_only=True)

    class Meta:
        model = Order
        fields = [
            "id",
            "user_id",
            "order_type",
            "status",
            "total_amount",
            "discount_amount",
            "pay_amount",
            "coupon_id",
            "items",
            "expire_at",
            "paid_at",
            "cancelled_at",
            "refunded_at",
            "refunded_amount",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A threshold coupon short of its minimum (the demo's template 12, once claimed)",
            response_only=True,
            value={
                "coupon_id": 3,
                "template_id": 12,
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
                "usable": False,
                "discount": 0,
                "reason": "threshold_not_met",
                "shortfall": 23500,
                "eligible_subtotal": 1500,
            },
        ),
    ]
)
class CouponOptionSerializer(serializers.Serializer):
    coupon_id = serializers.IntegerField(source="coupon.coupon_id")
    template_id = serializers.IntegerField(source="coupon.template_id")
    name = serializers.CharField(source="coupon.name", help_text="The coupon template's name.")
    type = serializers.ChoiceField(choices=COUPON_TYPE_CHOICES, source="coupon.type")
    value = serializers.IntegerField(source="coupon.value")
    min_amount = serializers.IntegerField(source="coupon.min_amount")
    max_discount = serializers.IntegerField(source="coupon.max_discount", allow_null=True)
    scope = serializers.ChoiceField(source="coupon.scope", choices=COUPON_SCOPE_CHOICES)
    scope_ids = serializers.ListField(source="coupon.scope_ids", child=serializers.IntegerField())
    excluded_product_ids = serializers.ListField(
        source="coupon.excluded_product_ids",
        child=serializers.IntegerField(),
        help_text="Products this coupon never discounts (not in its eligible subtotal).",
    )
    excluded_category_ids = serializers.ListField(
        source="coupon.excluded_category_ids",
        child=serializers.IntegerField(),
        help_text="Categories whose products this coupon never discounts.",
    )
    one_unit_only = serializers.BooleanField(
        source="coupon.one_unit_only", help_text="Off the cheapest eligible unit only."
    )
    valid_from = serializers.DateTimeField(
        source="coupon.valid_from", help_text="The coupon's own use window."
    )
    valid_until = serializers.DateTimeField(source="coupon.valid_until")
    usable = serializers.BooleanField()
    discount = serializers.IntegerField(help_text="Cents off this cart (or `amount`).")
    reason = serializers.ChoiceField(
        choices=[reason.value for reason in OptionReason],
        allow_null=True,
    )
    shortfall = serializers.IntegerField(
        allow_null=True, help_text="Eligible cents still to spend, for threshold_not_met."
    )
    eligible_subtotal = serializers.IntegerField(
        allow_null=True, help_text="The cart's lines in the coupon's scope; null for `amount`."
    )


class CategorySerializer(serializers.ModelSerializer):
    class Meta:
        model = Category
        fields = ["id", "name"]
        read_only_fields = fields


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A product in a category",
            response_only=True,
            value={
                "id": 1,
                "name": "茶具套装",
                "price": 9900,
                "stock": 50,
                "category": {"id": 2, "name": "茶品"},
            },
        ),
        OpenApiExample(
            "A product of another category (an uncategorised one has category null)",
            response_only=True,
            value={
                "id": 4,
                "name": "筷子",
                "price": 1500,
                "stock": 500,
                "category": {"id": 1, "name": "厨具"},
            },
        ),
    ]
)
class ProductSerializer(serializers.ModelSerializer):
    category = CategorySerializer(
        read_only=True, allow_null=True, help_text="Null for an uncategorised product."
    )

    class Meta:
        model = Product
        fields = ["id", "name", "price", "stock", "category"]
        read_only_fields = fields
        extra_kwargs = {"price": {"help_text": "Unit price in cents."}}
