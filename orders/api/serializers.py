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


class OrderItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = OrderItem
        fields = ["product_id", "title", "unit_price", "quantity"]
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
    valid_from = serializers.DateTimeField(source="coupon.valid_from")
    valid_until = serializers.DateTimeField(source="coupon.valid_until")
    usable = serializers.BooleanField()
    discount = serializers.IntegerField(help_text="Cents off an order of `amount`.")
    reason = serializers.ChoiceField(choices=["not_started", "threshold_not_met"], allow_null=True)
    shortfall = serializers.IntegerField(
        allow_null=True, help_text="Cents still to spend, for threshold_not_met."
    )
