from rest_framework import serializers

from config.limits import MAX_BIGINT
from config.serializers import StrictSerializer
from orders.models import Order, OrderItem

# Input serializers parse types and storage bounds only; the order rules (line count,
# quantities, one line per product) live in orders.services, which seckill shares.


class OrderLineInputSerializer(StrictSerializer):
    product_id = serializers.IntegerField(min_value=1, max_value=MAX_BIGINT)
    quantity = serializers.IntegerField(min_value=-MAX_BIGINT, max_value=MAX_BIGINT)


class CheckoutInputSerializer(StrictSerializer):
    items = OrderLineInputSerializer(many=True, allow_empty=True)
    coupon_id = serializers.IntegerField(
        min_value=1, max_value=MAX_BIGINT, required=False, allow_null=True, default=None
    )


class PayInputSerializer(StrictSerializer):
    amount = serializers.IntegerField(min_value=0, max_value=MAX_BIGINT)


class CouponOptionsQuerySerializer(StrictSerializer):
    amount = serializers.IntegerField(min_value=0, max_value=MAX_BIGINT)
    page = serializers.CharField(required=False)  # checked by the paginator
    page_size = serializers.CharField(required=False)


class CouponOptionsCartInputSerializer(StrictSerializer):
    items = OrderLineInputSerializer(many=True, allow_empty=True)


class OrderItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = OrderItem
        fields = ["product_id", "title", "unit_price", "quantity", "discount_amount"]
        read_only_fields = fields


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
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class CouponOptionSerializer(serializers.Serializer):
    coupon_id = serializers.IntegerField(source="coupon.coupon_id")
    template_id = serializers.IntegerField(source="coupon.template_id")
    type = serializers.CharField(source="coupon.type")
    value = serializers.IntegerField(source="coupon.value")
    min_amount = serializers.IntegerField(source="coupon.min_amount")
    max_discount = serializers.IntegerField(source="coupon.max_discount", allow_null=True)
    scope = serializers.ChoiceField(
        source="coupon.scope", choices=["all", "categories", "products"]
    )
    scope_ids = serializers.ListField(source="coupon.scope_ids", child=serializers.IntegerField())
    valid_from = serializers.DateTimeField(
        source="coupon.valid_from", help_text="The coupon's own use window."
    )
    valid_until = serializers.DateTimeField(source="coupon.valid_until")
    usable = serializers.BooleanField()
    discount = serializers.IntegerField(help_text="Cents off this cart (or `amount`).")
    reason = serializers.ChoiceField(
        choices=["not_started", "threshold_not_met", "not_applicable", "cart_required"],
        allow_null=True,
    )
    shortfall = serializers.IntegerField(
        allow_null=True, help_text="Eligible cents still to spend, for threshold_not_met."
    )
    eligible_subtotal = serializers.IntegerField(
        allow_null=True, help_text="The cart's lines in the coupon's scope; null for `amount`."
    )
