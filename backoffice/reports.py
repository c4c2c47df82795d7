"""The funnel and paid-use reports the back office shows (SPEC sections 13, 20 and 30). One
"used" for every figure: a coupon of an order that is paid and not refunded (paid, shipped or
completed), counted on the day of its payment. The back office stands above coupons and orders,
so these read both tables in one query each."""

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING, TypeAlias, TypedDict, cast

from django.db.models import Count, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, TruncHour
from django.urls import reverse

from coupons.coupon_status import CouponStatus
from coupons.errors import TemplateNotFound
from coupons.models import CouponTemplate, UserCoupon
from coupons.selectors import coupons_per_template
from orders.models import PAID_STATUSES, Order


class FunnelCounts(TypedDict):
    used_count: int
    expired_count: int


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    # A template as templates_with_funnel returns it (the admin's list and page).
    TemplateWithFunnel: TypeAlias = WithAnnotations[CouponTemplate, FunnelCounts]


# --- Days in the reader's time zone -----------------------------------------------------------


def hours_per_day(per_hour: Mapping[datetime, int], zone: tzinfo) -> dict[date, int]:
    """Counts per UTC hour summed into the days of `zone` (the database needs no time-zone
    tables; in a zone whose offset is not whole hours, an hour straddling midnight is counted
    on the day it starts)."""
    per_day: dict[date, int] = defaultdict(int)
    for hour, count in per_hour.items():
        per_day[hour.astimezone(zone).date()] += count
    return per_day


def coupons_per_hour(coupons: QuerySet[UserCoupon], moment_field: str) -> dict[datetime, int]:
    """How many of `coupons` per UTC hour of `moment_field` (one query)."""
    rows = (
        coupons.annotate(hour=TruncHour(moment_field, tzinfo=UTC))
        .order_by()
        .values("hour")
        .annotate(n=Count("pk"))
        .values_list("hour", "n")
    )
    return dict(rows)


def local_days_span(first_day: date, last_day: date, zone: tzinfo) -> tuple[datetime, datetime]:
    """The UTC instants from the start of `first_day` to the end of `last_day` in `zone`."""
    start = datetime.combine(first_day, time.min, tzinfo=zone).astimezone(UTC)
    end = datetime.combine(last_day + timedelta(days=1), time.min, tzinfo=zone).astimezone(UTC)
    return start, end


# --- Paid uses ---------------------------------------------------------------------------------


def paid_orders_with_coupons() -> QuerySet[Order]:
    """The orders whose coupon counts as used: paid and not given back."""
    return Order.objects.filter(coupon__isnull=False, status__in=PAID_STATUSES)


def paid_uses_per_template() -> Coalesce:
    """How many coupons of the outer query's template (a CouponTemplate queryset) a paid order
    used, as a correlated subquery on the orders' coupon index."""
    paid = (
        paid_orders_with_coupons()
        .filter(coupon__template_id=OuterRef("pk"))
        .order_by()
        .values("coupon__template_id")
        .annotate(n=Count("coupon_id", distinct=True))
        .values("n")
    )
    return Coalesce(Subquery(paid), 0)


def paid_coupon_uses(
    *, start: datetime, end: datetime, template_id: int | None = None
) -> list[tuple[datetime, int, int, int]]:
    """(UTC hour of payment, template id, coupons used, cents of discount) of the orders paid
    from `start` to `end` that used a coupon (of `template_id` when given) and still count as
    paid. One query."""
    orders = paid_orders_with_coupons().filter(paid_at__gte=start, paid_at__lt=end)
    if template_id is not None:
        orders = orders.filter(coupon__template_id=template_id)
    rows = (
        orders.annotate(hour=TruncHour("paid_at", tzinfo=UTC))
        .order_by()
        .values("hour", "coupon__template_id")
        .annotate(uses=Count("pk"), discount=Sum("discount_amount"))
        .values_list("hour", "coupon__template_id", "uses", "discount")
    )
    return [(hour, template_id, uses, int(discount)) for hour, template_id, uses, discount in rows]


@dataclass(frozen=True)
class CouponOrder:
    """An order that used a coupon, as the coupons admin shows it."""

    order_id: int
    coupon_id: int
    status: str
    total_amount: int
    discount_amount: int
    pay_amount: int
    created_at: datetime
    admin_url: str
    status_label: str = ""  # the status in the admin's language
    paid: bool = False  # paid for and not given back: the coupon counts as used


def coupons_paid_for(coupon_ids: list[int]) -> set[int]:
    """Those of `coupon_ids` that a paid order used (refunded ones too). One query."""
    if not coupon_ids:
        return set()
    paid = Order.objects.filter(coupon_id__in=coupon_ids, status__in=PAID_STATUSES)
    return set(paid.values_list("coupon_id", flat=True))


def orders_using_coupons(
    *,
    template_id: int | None = None,
    coupon_ids: list[int] | None = None,
    order_ids: list[int] | None = None,
    limit: int = 10,
) -> list[CouponOrder]:
    """Newest orders that carry one of `coupon_ids`, or any coupon of `template_id` (cancelled
    ones too: their coupon went back), narrowed to `order_ids` when given. One query."""
    orders = Order.objects.exclude(coupon=None)
    if order_ids is not None:
        orders = orders.filter(pk__in=order_ids)
    if template_id is not None:
        orders = orders.filter(coupon__template_id=template_id)
    if coupon_ids is not None:
        orders = orders.filter(coupon_id__in=coupon_ids)
    return [
        CouponOrder(
            order_id=order.pk,
            coupon_id=order.coupon_id,
            status=order.status,
            total_amount=order.total_amount,
            discount_amount=order.discount_amount,
            pay_amount=order.pay_amount,
            created_at=order.created_at,
            admin_url=reverse("admin:orders_order_change", args=[order.pk]),
            status_label=str(order.get_status_display()),
            paid=order.status in PAID_STATUSES,
        )
        for order in orders.order_by("-id")[:limit]
        if order.coupon_id is not None  # always, by the filter above; for the type
    ]


# --- The funnel ---------------------------------------------------------------------------------


def templates_for_admin() -> QuerySet[CouponTemplate]:
    """Templates, newest first, each with `used_count` from one correlated subquery and its
    campaign joined."""
    templates = CouponTemplate.objects.select_related("campaign")
    return templates.annotate(used_count=paid_uses_per_template()).order_by("-id")


def template_for_admin(template_id: int) -> CouponTemplate:
    template = templates_for_admin().filter(pk=template_id).first()
    if template is None:
        raise TemplateNotFound()
    return template


def templates_with_funnel(*, now: datetime) -> "QuerySet[TemplateWithFunnel]":
    """Templates, newest first, with `used_count` and `expired_count`: one correlated subquery
    each on an index, so a page costs the same number of queries for 1 or 100 rows. Claimed
    is the template's own `claimed_count` column; used counts the coupons of paid orders (a
    coupon an unpaid order holds is not used yet)."""
    # Each coupon's own window decides (valid_days coupons expire one by one).
    expired = coupons_per_template(UserCoupon.objects.with_status(CouponStatus.EXPIRED, now=now))
    return CouponTemplate.objects.annotate(
        used_count=paid_uses_per_template(), expired_count=expired
    ).order_by("-id")


@dataclass(frozen=True)
class TemplateFunnel:
    claimed: int
    total: int
    used: int
    expired: int

    @property
    def redemption_rate(self) -> float | None:
        """used / claimed, None before the first claim."""
        return self.used / self.claimed if self.claimed else None


def template_funnel(
    template: "CouponTemplate | TemplateWithFunnel", *, now: datetime
) -> TemplateFunnel:
    """The funnel of one template; reads the annotations when `template` came from
    templates_with_funnel, otherwise counts (two indexed queries)."""
    counted = (
        cast("TemplateWithFunnel", template)  # annotated: it came from templates_with_funnel
        if hasattr(template, "used_count")
        else templates_with_funnel(now=now).get(pk=template.pk)
    )
    return TemplateFunnel(
        claimed=counted.claimed_count,
        total=counted.total,
        used=counted.used_count,
        expired=counted.expired_count,
    )


@dataclass(frozen=True)
class DayActivity:
    day: date
    claims: int
    uses: int


def template_activity_per_day(
    template: CouponTemplate, *, now: datetime, zone: tzinfo, days: int = 30
) -> list[DayActivity]:
    """Claims and paid uses of a template per day in `zone`, for the `days` days up to today
    (or up to the template's last day once it has ended), oldest first, days without activity
    as 0. The database counts per UTC hour (at most 24 x days rows per series), put into the
    zone's days here."""
    last_day = min(now, template.valid_until).astimezone(zone).date()
    first_day = max(template.valid_from.astimezone(zone).date(), last_day - timedelta(days - 1))
    if first_day > last_day:
        return []
    start, end = local_days_span(first_day, last_day, zone)
    claimed = UserCoupon.objects.filter(
        template=template, created_at__gte=start, created_at__lt=end
    )
    claims = hours_per_day(coupons_per_hour(claimed, "created_at"), zone)
    paid = paid_coupon_uses(start=start, end=end, template_id=template.pk)
    uses_per_hour: dict[datetime, int] = defaultdict(int)
    for hour, _template_id, used, _discount in paid:
        uses_per_hour[hour] += used
    uses = hours_per_day(uses_per_hour, zone)
    span = (last_day - first_day).days + 1
    return [
        DayActivity(day=day, claims=claims[day], uses=uses[day])
        for day in (first_day + timedelta(days=offset) for offset in range(span))
    ]
