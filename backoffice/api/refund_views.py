"""Staff order API: refunds (SPEC section 25), under the same permission as the admin's; a
viewset on the router of backoffice/api/urls.py."""

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from api.idempotency import idempotent
from api.schema import api_errors
from backoffice.api.refund_serializers import RefundAnswerSerializer, RefundInputSerializer
from backoffice.staff_actions import StaffAction, StaffActionPermission, staff_audit
from orders import refunds
from orders.errors import OrderInvalid, OrderInvalidState, OrderNotFound
from orders.models import Order, Refund


def refund_effect_answer(view, request, effect_id: int, *args, **kwargs) -> Response:
    """The answer of a refund that committed but whose answer was lost (api.idempotency): the
    refund, and its order as it stands now."""
    refund = Refund.objects.select_related("order").get(pk=effect_id)
    answer = RefundAnswerSerializer({"order": refund.order, "refund": refund})
    return Response(answer.data, status=status.HTTP_201_CREATED)


class AdminOrderViewSet(GenericViewSet):
    permission_classes = [IsAuthenticated, StaffActionPermission]
    staff_actions = {"refund": StaffAction.ORDER_REFUND}
    serializer_class = RefundAnswerSerializer
    lookup_url_kwarg = "order_id"
    lookup_value_converter = "id"  # api/converters.py

    @extend_schema(
        summary=gettext_lazy("Refund an order or some of its lines"),
        request=RefundInputSerializer,
        responses={201: RefundAnswerSerializer, 200: RefundAnswerSerializer},
        description="Refund a paid, shipped or completed order: the whole order, or some "
        "units of some lines, with a reason. The refunded units go back to stock; the money "
        "of a line is split evenly over its units (the last takes the remainder), so the "
        "refunds add up to `pay_amount` exactly. When the last unit is refunded the order is "
        "`refunded` and its coupon goes back to unused while the coupon's window is open. "
        "201 with the refund; 200 with `refund: null` when a whole refund finds the order "
        "refunded already. 400 names `reason` or `lines`; 409 `invalid_state` for an order "
        "never paid or cancelled.",
    )
    @api_errors(OrderNotFound, OrderInvalid, OrderInvalidState)
    @action(detail=True, methods=["post"])
    @idempotent(effect_answer=refund_effect_answer)
    def refund(self, request, order_id: int, *, effect_record):
        if not Order.objects.filter(pk=order_id).exists():
            raise OrderNotFound()
        payload = RefundInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        lines = payload.validated_data["lines"]
        outcome = refunds.order_refund(
            order_id=order_id,
            reason=payload.validated_data["reason"],
            lines=None if lines is None else _units_by_line(lines),
            refunded_by_id=request.user.pk,
            audit=staff_audit(request.user, StaffAction.ORDER_REFUND),
            effect_record=effect_record,
        )
        answer = RefundAnswerSerializer({"order": outcome.order, "refund": outcome.refund})
        created = outcome.refund is not None
        return Response(answer.data, status=status.HTTP_201_CREATED if created else 200)


def _units_by_line(lines: list[dict]) -> dict[int, int]:
    """Line id -> units; a line named twice is refused (400 naming `lines`)."""
    units: dict[int, int] = {}
    for line in lines:
        if line["line_id"] in units:
            raise OrderInvalid(fields={"lines": [_("Each line at most once.")]})
        units[line["line_id"]] = line["quantity"]
    return units
