"""Shopper order API, as viewsets on the router of orders/api/urls.py (the products; my orders
with `cancel`, `pay` and the coupon advisor): validate -> call one service -> render."""

from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from api.idempotency import idempotent
from api.schema import api_errors
from api.throttles import CheckoutThrottle
from coupons.errors import (
    BudgetExhausted,
    CouponExpired,
    CouponNotEligible,
    CouponNotFound,
    CouponRollbackFailed,
    CouponUsed,
)
from orders import selectors, services
from orders.api.serializers import (
    CheckoutInputSerializer,
    CouponOptionsCartInputSerializer,
    CouponOptionSerializer,
    CouponOptionsQuerySerializer,
    OrderSerializer,
    PayInputSerializer,
    ProductSerializer,
)
from orders.errors import (
    AmountMismatch,
    CouponNotApplicable,
    OrderInvalid,
    OrderInvalidState,
    OrderNotFound,
    OutOfStock,
    ProductNotFound,
    ThresholdNotMet,
    TooManyUnpaidOrders,
)


def order_response(user_id: int, order_id: int, status_code: int = status.HTTP_200_OK):
    order = selectors.order_for_user(user_id=user_id, order_id=order_id)
    return Response(OrderSerializer(order).data, status=status_code)


def order_effect_answer(status_code: int):
    """The answer of an order command whose order committed but whose answer was lost
    (api.idempotency): the order as it stands now."""

    def answer(view, request, effect_id: int, *args, **kwargs) -> Response:
        return order_response(request.user.pk, effect_id, status_code)

    return answer


class OrderViewSet(GenericViewSet):
    serializer_class = OrderSerializer
    lookup_url_kwarg = "order_id"
    lookup_value_converter = "id"  # api/converters.py

    def get_queryset(self):
        return selectors.orders_for_user(user_id=self.request.user.pk)

    def get_throttles(self):
        """Checkout only; reading one's orders is not limited."""
        return [CheckoutThrottle()] if self.action == "create" else []

    @extend_schema(summary=gettext_lazy("My orders"), responses=OrderSerializer(many=True))
    def list(self, request):
        """My orders, newest first, with their lines."""
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(OrderSerializer(page, many=True).data)

    @extend_schema(
        summary=gettext_lazy("Check out"),
        request=CheckoutInputSerializer,
        responses={201: OrderSerializer},
    )
    @api_errors(
        OrderInvalid,
        ProductNotFound,
        CouponNotFound,
        OutOfStock,
        ThresholdNotMet,
        CouponUsed,
        CouponExpired,
        CouponNotEligible,
        CouponNotApplicable,
        BudgetExhausted,
        TooManyUnpaidOrders,
    )
    @idempotent(effect_answer=order_effect_answer(status.HTTP_201_CREATED))
    def create(self, request, *, effect_record):
        """Check out: lines of products (stock is taken now) and optionally one of my unused
        coupons, which must apply to the lines in its scope and meet its threshold. The order
        awaits payment until `expire_at`, after which it is cancelled (stock and coupon back).
        Each line carries its share of the discount (`discount_amount`). A new-customers
        coupon is for my first paid order only: 409 `not_eligible` once I have paid for one."""
        payload = CheckoutInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        order = services.order_checkout(
            user_id=request.user.pk, effect_record=effect_record, **payload.validated_data
        )
        return order_response(request.user.pk, order.pk, status.HTTP_201_CREATED)

    @extend_schema(summary=gettext_lazy("One of my orders"), responses=OrderSerializer)
    @api_errors(OrderNotFound)
    def retrieve(self, request, order_id: int):
        """One of my orders; someone else's is 404, as an unknown one."""
        return order_response(request.user.pk, order_id)

    @extend_schema(
        summary=gettext_lazy("Cancel an unpaid order"), request=None, responses=OrderSerializer
    )
    @api_errors(OrderNotFound, OrderInvalidState, CouponRollbackFailed)
    @action(detail=True, methods=["post"])
    @idempotent(effect_answer=order_effect_answer(status.HTTP_200_OK))
    def cancel(self, request, order_id: int, *, effect_record):
        """Cancel an order awaiting payment: its stock and coupon are given back. Any other
        state is 409 `invalid_state`."""
        services.order_cancel(
            user_id=request.user.pk, order_id=order_id, effect_record=effect_record
        )
        return order_response(request.user.pk, order_id)

    @extend_schema(
        summary=gettext_lazy("Pay an order"), request=PayInputSerializer, responses=OrderSerializer
    )
    @api_errors(OrderNotFound, OrderInvalidState, AmountMismatch, CouponNotEligible, CouponExpired)
    @action(detail=True, methods=["post"])
    @idempotent(effect_answer=order_effect_answer(status.HTTP_200_OK))
    def pay(self, request, order_id: int, *, effect_record):
        """Pay an order awaiting payment with exactly its `pay_amount` (cents): 409
        `amount_mismatch` otherwise, `invalid_state` once paid, cancelled or expired;
        `not_eligible` when its coupon is for a first paid order only and another order of
        mine was paid first; `coupon_expired` when its coupon was taken back since (the order
        that earned it was refunded)."""
        payload = PayInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        services.order_pay(
            user_id=request.user.pk,
            order_id=order_id,
            effect_record=effect_record,
            **payload.validated_data,
        )
        return order_response(request.user.pk, order_id)

    @extend_schema(
        summary=gettext_lazy("My coupons for an order total"),
        parameters=[
            OpenApiParameter(
                "amount", OpenApiTypes.INT, required=True, description="Order total in cents."
            ),
        ],
        responses=CouponOptionSerializer(many=True),
    )
    @action(
        detail=False,
        methods=["get"],
        url_path="coupon-options",
        serializer_class=CouponOptionSerializer,
    )
    def coupon_options(self, request):
        """Judge each of my unused coupons against an order total (`amount`, cents): usable
        or why not, and the discount it would give. Scoped coupons need a cart (POST)."""
        query = CouponOptionsQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        options = selectors.coupon_options(
            user_id=request.user.pk, amount=query.validated_data["amount"]
        )
        page = self.paginate_queryset(options)
        return self.get_paginated_response(CouponOptionSerializer(page, many=True).data)

    @extend_schema(
        summary=gettext_lazy("My coupons for a cart"),
        request=CouponOptionsCartInputSerializer,
        responses=CouponOptionSerializer(many=True),
        description="Judge each of my unused coupons against this cart: scope, type, cap and "
        "threshold on the eligible subtotal, as checkout would.",
    )
    @api_errors(OrderInvalid, ProductNotFound)
    @coupon_options.mapping.post
    def coupon_options_for_cart(self, request):
        payload = CouponOptionsCartInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        options = selectors.coupon_options(
            user_id=request.user.pk, items=payload.validated_data["items"]
        )
        page = self.paginate_queryset(options)
        return self.get_paginated_response(CouponOptionSerializer(page, many=True).data)


class ProductViewSet(GenericViewSet):
    serializer_class = ProductSerializer

    def get_queryset(self):
        return selectors.products_listed()

    @extend_schema(
        summary=gettext_lazy("Products"),
        responses=ProductSerializer(many=True),
        description="The catalog, a page at a time in id order: what an order's `items` and a "
        "scoped coupon's `scope_ids` name (product ids, or category ids).",
    )
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ProductSerializer(page, many=True).data)
