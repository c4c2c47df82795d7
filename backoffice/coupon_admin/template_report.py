"""The template page's report (funnel, chart, recent claims, orders) and its CSV export."""

import csv
from collections.abc import Iterator

from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice import reports
from backoffice.coupon_admin.chart import activity_chart_svg
from backoffice.coupon_admin.display import (
    COUPON_STATUS_LABELS,
    RECENT_ROWS,
    local_datetime,
    rate_text,
    reason_text,
    shown_status,
)
from core import clock
from core.csv_cells import csv_row
from core.money import format_money
from core.read_routing import replica_lines, replica_reads
from coupons import selectors
from coupons.models import CouponTemplate, UserCoupon

CSV_BATCH_SIZE = 1000


def template_report(template: CouponTemplate) -> dict:
    """Read on the replica when there is one: a report may be a moment behind the sale."""
    with replica_reads():
        return _template_report(template)


def _template_report(template: CouponTemplate) -> dict:
    now = clock.now()
    funnel = reports.template_funnel(template, now=now)
    days = reports.template_activity_per_day(
        template, now=now, zone=timezone.get_current_timezone()
    )
    recent = selectors.recent_claims(template_id=template.pk, limit=RECENT_ROWS)
    paid = reports.coupons_paid_for([coupon.pk for coupon in recent])
    return {
        "funnel": funnel,
        "redemption_rate": rate_text(funnel.redemption_rate),
        "activity_chart": activity_chart_svg(days),
        "recent_claims": [
            {
                "coupon": coupon,
                "claimed_at": local_datetime(coupon.created_at),
                "used_at": local_datetime(coupon.used_at),
                "status": COUPON_STATUS_LABELS[shown_status(coupon, now=now, paid=paid)],
            }
            for coupon in recent
        ],
        "orders": [
            {
                "order": order,
                "total": format_money(order.total_amount),
                "discount": format_money(order.discount_amount),
                "created_at": local_datetime(order.created_at),
            }
            for order in reports.orders_using_coupons(template_id=template.pk, limit=RECENT_ROWS)
        ],
        "export_url": reverse("admin:coupons_coupontemplate_export", args=[template.pk]),
        "grant_url": reverse("admin:coupons_coupontemplate_grant", args=[template.pk]),
        "window_help": _(
            "Editing the claim window changes only who may still claim: every coupon "
            "already issued keeps its own use window."
        ),
    }


# The columns, headers in the admin's language: Excel shows them as they are.
CSV_HEADER = [
    gettext_lazy("coupon id"),
    gettext_lazy("template"),
    gettext_lazy("user id"),
    gettext_lazy("username"),
    gettext_lazy("source"),
    gettext_lazy("status"),
    gettext_lazy("claimed at"),
    gettext_lazy("valid until"),
    gettext_lazy("used at"),
    gettext_lazy("order id"),
    gettext_lazy("grant reason"),
    gettext_lazy("granted by"),
]
# Excel reads a CSV as the machine's legacy code page unless it starts with a byte order mark
# (张三 opened as 寮犱笁 without one); every other reader skips it.
UTF8_BOM = "\ufeff"
CSV_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # local time (TIME_ZONE), whole seconds: Excel parses it


def csv_time(moment) -> str:
    return timezone.localtime(moment).strftime(CSV_TIME_FORMAT) if moment else ""


def csv_lines(template: CouponTemplate, *, now) -> Iterator[str]:
    """The template's coupons as CSV lines for Excel, oldest first, read in keyset batches of
    CSV_BATCH_SIZE with one order lookup per batch: a BOM, headers and labels in the admin's
    language, times local to TIME_ZONE without fractions of a second. Read on the replica
    when there is one, as the report."""
    return replica_lines(_csv_lines(template, now=now))


def _csv_lines(template: CouponTemplate, *, now) -> Iterator[str]:

    class Line:  # csv.writer wants a file; this one hands back the line just written
        def write(self, text: str) -> str:
            return text

    writer = csv.writer(Line())
    yield UTF8_BOM + writer.writerow(csv_row([str(header) for header in CSV_HEADER]))
    sources = dict(UserCoupon.Source.choices)
    last_id = 0
    while True:
        batch = list(
            UserCoupon.objects.filter(template_id=template.pk, pk__gt=last_id)
            .select_related("user", "granted_by")
            .order_by("pk")[:CSV_BATCH_SIZE]
        )
        if not batch:
            return
        ids = [coupon.pk for coupon in batch]
        orders = reports.orders_using_coupons(coupon_ids=ids, limit=len(ids) * 4)  # newest first
        order_of = {order.coupon_id: order.order_id for order in reversed(orders)}
        paid = {order.coupon_id for order in orders if order.paid}
        for coupon in batch:
            coupon.template = template  # the one template, not a query per row
            granter = coupon.granted_by
            # Every cell through csv_row: a username, a template name or a grant reason may
            # start with = + - @ (CSV injection).
            yield writer.writerow(
                csv_row(
                    [
                        coupon.pk,
                        template.name,
                        coupon.user_id,
                        coupon.user.get_username(),
                        str(sources.get(coupon.source, coupon.source)),
                        str(COUPON_STATUS_LABELS[shown_status(coupon, now=now, paid=paid)]),
                        csv_time(coupon.created_at),
                        csv_time(coupon.valid_until),
                        csv_time(coupon.used_at),
                        order_of.get(coupon.pk, ""),
                        reason_text(coupon.grant_reason) if coupon.grant_reason else "",
                        granter.get_username() if granter is not None else "",
                    ]
                )
            )
        last_id = ids[-1]
