"""The staff refund API's bodies and answers (backoffice/api/refund_views.py)."""

from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from api.serializers import StrictSerializer
from core.limits import MAX_BIGINT
from orders.api.serializers import ORDER_EXAMPLE, OrderSerializer
from orders.models import MAX_QUANTITY, REFUND_REASON_MAX_LENGTH, Refund


class RefundLineInputSerializer(StrictSerializer):
    line_id = serializers.IntegerField(
        min_value=1, max_value=MAX_BIGINT, help_text="An order line's `id` (see `items`)."
    )
    quantity = serializers.IntegerField(
        min_value=1, max_value=MAX_QUANTITY, help_text="Units of that line to refund."
    )


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "The whole order", request_only=True, value={"reason": "商品破损，全额退款"}
        ),
        OpenApiExample(
            "One unit of one line",
            request_only=True,
            value={"reason": "少发一件", "lines": [{"line_id": 1, "quantity": 1}]},
        ),
    ]
)
class RefundInputSerializer(StrictSerializer):
    reason = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,  # the service says what is wrong with a blank one
        help_text=f"Why the money goes back: required, 1 to {REFUND_REASON_MAX_LENGTH} "
        "characters; kept with the refund and in the audit trail.",
    )
    lines = RefundLineInputSerializer(
        many=True,
        required=False,
        allow_null=True,
        default=None,
        help_text="Which units to refund; left out, every unit not yet refunded (the whole order).",
    )


class RefundSerializer(serializers.ModelSerializer):
    lines = serializers.SerializerMethodField()

    class Meta:
        model = Refund
        fields = ["id", "amount", "reason", "lines", "coupon_returned", "created_at"]
        read_only_fields = fields

    def get_lines(self, refund: Refund) -> list[dict[str, int]]:
        return [
            {"line_id": int(line_id), "quantity": quantity}
            for line_id, quantity in refund.lines.items()
        ]


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "One unit of a shipped order's first line",
            response_only=True,
            status_codes=["201"],
            value={
                "order": ORDER_EXAMPLE
                | {
                    "status": "shipped",
                    "paid_at": "2026-12-01T10:16:40.512000Z",
                    "refunded_amount": 9667,
                    "items": [
                        ORDER_EXAMPLE["items"][0] | {"refunded_quantity": 1},
                        ORDER_EXAMPLE["items"][1],
                    ],
                    "updated_at": "2026-12-02T09:02:11.004000Z",
                },
                "refund": {
                    "id": 1,
                    "amount": 9667,
                    "reason": "少发一件",
                    "lines": [{"line_id": 1, "quantity": 1}],
                    "coupon_returned": False,
                    "created_at": "2026-12-02T09:02:11.004000Z",
                },
            },
        ),
        OpenApiExample(
            "Refunded whole already: nothing done",
            response_only=True,
            status_codes=["200"],
            value={
                "order": ORDER_EXAMPLE
                | {
                    "status": "refunded",
                    "paid_at": "2026-12-01T10:16:40.512000Z",
                    "refunded_at": "2026-12-02T09:02:11.004000Z",
                    "refunded_amount": 20800,
                    "items": [
                        ORDER_EXAMPLE["items"][0] | {"refunded_quantity": 2},
                        ORDER_EXAMPLE["items"][1] | {"refunded_quantity": 1},
                    ],
                    "updated_at": "2026-12-02T09:02:11.004000Z",
                },
                "refund": None,
            },
        ),
    ]
)
class RefundAnswerSerializer(serializers.Serializer):
    order = OrderSerializer()
    refund = RefundSerializer(
        allow_null=True, help_text="null: the order was refunded whole already; nothing done."
    )
