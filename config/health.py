"""GET /healthz: the database decides (down -> 503); Redis is advisory (down -> degraded)."""

from django.db import connection
from django.http import JsonResponse

from coupons.counter import coupon_counter


def healthz(request) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception:
        database = "down"
    redis = "ok" if coupon_counter().ping() else "down"
    if database != "ok":
        overall = "down"
    elif redis != "ok":
        overall = "degraded"
    else:
        overall = "ok"
    body = {"status": overall, "database": database, "redis": redis}
    return JsonResponse(body, status=503 if overall == "down" else 200)
