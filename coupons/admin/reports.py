"""The template page's report (funnel, chart, recent claims, orders) and its CSV export."""

import csv
from collections.abc import Iterator

from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from core import clock
from core.csv_cells import csv_row
from core.money import format_money
from coupons import selectors
from coupons.admin.chart import activity_chart_svg
from coupons.admin.display import (
    COUPON_STATUS_LABELS,
    RECENT_ROWS,
    local_datetime,
    orders_lookup,
    rate_text,
)
from coupons.models import CouponTemplate, UserCoupon

CSV_BATCH_SIZE = 1000


def template_report(template: CouponTemplate) -> dict:
    now = clock.now()
    funnel = selectors.template_funnel(template, now=now)
    days = selectors.template_activity_per_day(
        template, now=now, zone=timezone.get_current_timezone()
    )
    return {
        "funnel": funnel,
        "redemption_rate": rate_text(funnel.redemption_rate),
        "activity_chart": activity_chart_svg(days),
        "recent_claims": [
            {
                "coupon": coupon,
                "claimed_at": local_datetime(coupon.created_at),
                "used_at": local_datetime(coupon.used_at),
                "status": COUPON_STATUS_LABELS[selectors.derived_status(coupon, now=now)],
            }
            for coupon in selectors.recent_claims(template_id=template.pk, limit=RECENT_ROWS)
        ],
        "orders": [
            {
                "order": order,
                "total": format_money(order.total_amount),
                "discount": format_money(order.discount_amount),
                "created_at": local_datetime(order.created_at),
            }
            for order in orders_lookup()(template_id=template.pk, limit=RECENT_ROWS)
        ],
        "export_url": reverse("admin:coupons_coupontemplate_export", args=[template.pk]),
        "grant_url": reverse("admin:coupons_coupontemplate_grant", args=[template.pk]),
        "window_help": _(
            "Editing the claim window changes only who may still claim: every coupon "
            "already issued keeps its own use window."
        ),
    }


CSV_HEADER = [
    "coupon_id",
    "user_id",
    "username",
    "source",
    "status",
    "claimed_at",
    "valid_until",
    "used_at",
    "order_id",
]


def csv_lines(template: CouponTemplate, *, now) -> Iterator[str]:
    """The template's coupons as CSV lines, oldest first, read in keyset batches of
    CSV_BATCH_SIZE with one order lookup per batch. Times are ISO 8601 in TIME_ZONE."""

    class Line:  # csv.writer wants a file; this one hands back the line just written
        def write(self, text: str) -> str:
            return text

    writer = csv.writer(Line())
    yield writer.writerow(CSV_HEADER)
    last_id = 0
    while True:
        batch = list(
            UserCoupon.objects.filter(template_id=template.pk, pk__gt=last_id)
            .select_related("user")
            .order_by("pk")[:CSV_BATCH_SIZE]
        )
        if not batch:
            return
        ids = [coupon.pk for coupon in batch]
        order_of = {
            order.coupon_id: order.order_id
            for order in orders_lookup()(coupon_ids=ids, limit=len(ids) * 2)
        }
        for coupon in batch:
            coupon.template = template  # the one template, not a query per row
            # Every cell through csv_row: a username may start with = + - @ (CSV injection).
            yield writer.writerow(
                csv_row(
                    [
                        coupon.pk,
                        coupon.user_id,
                        coupon.user.get_username(),
                        coupon.source,
                        selectors.derived_status(coupon, now=now),
                        timezone.localtime(coupon.created_at).isoformat(),
                        timezone.localtime(coupon.valid_until).isoformat(),
                        timezone.localtime(coupon.used_at).isoformat() if coupon.used_at else "",
                        order_of.get(coupon.pk, ""),
                    ]
                )
            )
        last_id = ids[-1]
