"""GET /bench/bare: what Django and DRF cost with nothing of ours in the view: no
authentication, no permission, no throttle, no database, no Redis. The benchmark's ceiling
row (SPEC section 21, bench/scenarios/limits.py); routed only when the BENCH_BARE_VIEW setting
is on (the bench's server sets it), so production never serves it."""

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    permission_classes,
    throttle_classes,
)
from rest_framework.request import Request
from rest_framework.response import Response


@extend_schema(exclude=True)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([])
@throttle_classes([])
def bare(request: Request) -> Response:
    return Response({"ok": True})
