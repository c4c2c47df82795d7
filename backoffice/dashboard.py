"""The admin dashboard's figures (SPEC sections 23, 27): claims, uses and discount given per
day, the templates most claimed, the coupons ending soon and the campaigns running, in five
queries whatever the volume (tests/backoffice/test_dashboard.py counts them). A use is a coupon
of an order that is paid and not refunded, as in the funnel, the CSV and the admin API (SPEC
section 20), counted on the day of its payment with that order's discount
(backoffice/reports.py)."""

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from django.db.models import Count, QuerySet

from backoffice.reports import coupons_per_hour, hours_per_day, local_days_span, paid_coupon_uses
from coupons.models import Campaign, CouponTemplate, UserCoupon

DASHBOARD_DAYS = 30
TOP_TEMPLATES = 10
ENDING_WITHIN = timedelta(days=7)
ENDING_SOON_ROWS = 10


@dataclass(frozen=True)
class DashboardDay:
    day: date
    claims: int
    uses: int
    discount: int  # cents


@dataclass(frozen=True)
class TopTemplate:
    template_id: int
    name: str
    claims: int  # within the dashboard's days
    uses: int  # paid for within the dashboard's days


@dataclass(frozen=True)
class EndingSoon:
    template_id: int
    name: str
    valid_until: datetime
    claimed_count: int
    total: int


@dataclass(frozen=True)
class RunningCampaign:
    campaign_id: int
    name: str
    ends_at: datetime
    budget: int | None
    spent: int


@dataclass(frozen=True)
class Dashboard:
    days: list[DashboardDay]
    top_templates: list[TopTemplate]
    ending_soon: list[EndingSoon]
    running_campaigns: list[RunningCampaign]


def dashboard_figures(*, now: datetime, zone: tzinfo, days: int = DASHBOARD_DAYS) -> Dashboard:
    """The dashboard for the `days` days up to today in `zone` (oldest first, quiet days as 0)
    the templates whose claim window closes within ENDING_WITHIN and the campaigns running.
    Five queries."""
    last_day = now.astimezone(zone).date()
    first_day = last_day - timedelta(days=days - 1)
    start, end = local_days_span(first_day, last_day, zone)
    claimed = UserCoupon.objects.filter(created_at__gte=start, created_at__lt=end)
    claims = hours_per_day(coupons_per_hour(claimed, "created_at"), zone)
    paid = paid_coupon_uses(start=start, end=end)
    uses_per_hour: dict[datetime, int] = defaultdict(int)
    discount_per_hour: dict[datetime, int] = defaultdict(int)
    uses_per_template: dict[int, int] = defaultdict(int)
    for hour, template_id, used, discount in paid:
        uses_per_hour[hour] += used
        discount_per_hour[hour] += discount
        uses_per_template[template_id] += used
    uses = hours_per_day(uses_per_hour, zone)
    discounts = hours_per_day(discount_per_hour, zone)
    every_day = [first_day + timedelta(days=offset) for offset in range(days)]
    return Dashboard(
        days=[
            DashboardDay(day=day, claims=claims[day], uses=uses[day], discount=discounts[day])
            for day in every_day
        ],
        top_templates=_top_templates(claimed, uses_per_template),
        ending_soon=_ending_soon(now),
        running_campaigns=_running_campaigns(now),
    )


def _running_campaigns(now: datetime) -> list[RunningCampaign]:
    """The campaigns running now, ending first first, with their budget used (one query)."""
    running = Campaign.objects.filter(starts_at__lte=now, ends_at__gt=now).order_by("ends_at", "id")
    return [
        RunningCampaign(
            campaign_id=campaign.pk,
            name=campaign.name,
            ends_at=campaign.ends_at,
            budget=campaign.budget,
            spent=campaign.spent,
        )
        for campaign in running[:ENDING_SOON_ROWS]
    ]


def _top_templates(
    claimed: QuerySet[UserCoupon], uses_per_template: Mapping[int, int]
) -> list[TopTemplate]:
    rows = (
        claimed.order_by()
        .values("template_id", "template__name")
        .annotate(claims=Count("pk"))
        .order_by("-claims", "template_id")[:TOP_TEMPLATES]
    )
    return [
        TopTemplate(
            template_id=row["template_id"],
            name=row["template__name"],
            claims=row["claims"],
            uses=uses_per_template.get(row["template_id"], 0),
        )
        for row in rows
    ]


def _ending_soon(now: datetime) -> list[EndingSoon]:
    templates = CouponTemplate.objects.filter(
        valid_from__lte=now, valid_until__gt=now, valid_until__lte=now + ENDING_WITHIN
    ).order_by("valid_until", "id")[:ENDING_SOON_ROWS]
    return [
        EndingSoon(
            template_id=template.pk,
            name=template.name,
            valid_until=template.valid_until,
            claimed_count=template.claimed_count,
            total=template.total,
        )
        for template in templates.only("name", "valid_until", "claimed_count", "total")
    ]
