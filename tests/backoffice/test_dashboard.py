"""The admin dashboard (SPEC section 23): its figures counted against data made here, in a
bounded number of queries, and its page for whoever may and may not read templates."""

import json
import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from backoffice.dashboard import dashboard_figures
from backoffice.reports import template_activity_per_day, template_funnel
from coupons.models import UserCoupon
from orders.models import Order
from tests.support.admin_users import staff_with
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory

pytestmark = pytest.mark.django_db
SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # the frozen_now fixture's instant


def coupon(template, *, claimed_at: datetime, used_at: datetime | None = None) -> UserCoupon:
    made = UserCouponFactory(template=template, user=UserFactory())
    status = UserCoupon.Status.USED if used_at else UserCoupon.Status.UNUSED
    UserCoupon.objects.filter(pk=made.pk).update(
        created_at=claimed_at, used_at=used_at, status=status
    )
    return made


def order(used: UserCoupon, *, discount: int, at: datetime, status=Order.Status.PAID) -> None:
    """An order that used `used`, checked out and (unless pending or cancelled) paid at `at`."""
    paid = status in (Order.Status.PAID, Order.Status.SHIPPED, Order.Status.REFUNDED)
    Order.objects.create(
        user=used.user,
        coupon=used,
        status=status,
        cancelled_at=at if status == Order.Status.CANCELLED else None,
        paid_at=at if paid else None,
        refunded_at=at if status == Order.Status.REFUNDED else None,
        total_amount=10_000,
        discount_amount=discount,
        pay_amount=10_000 - discount,
        expire_at=at + timedelta(minutes=15),
        created_at=at,
    )


@pytest.fixture
def shop(frozen_now):
    tea = CouponTemplateFactory(name="Tea", valid_until=NOW + timedelta(days=2), total=50)
    cups = CouponTemplateFactory(name="Cups", valid_until=NOW + timedelta(days=30))
    CouponTemplateFactory(name="Later", valid_until=NOW + timedelta(days=8))
    CouponTemplateFactory(name="Ended", valid_until=NOW - timedelta(hours=1))
    # 17:00 UTC on 31 May is 01:00 on 1 June in Shanghai.
    late = datetime(2026, 5, 31, 17, 0, tzinfo=UTC)
    used = coupon(tea, claimed_at=late, used_at=NOW - timedelta(hours=2))
    coupon(tea, claimed_at=late)
    coupon(tea, claimed_at=datetime(2026, 5, 31, 15, 0, tzinfo=UTC))  # 23:00 on 31 May there
    cups_used = coupon(cups, claimed_at=datetime(2026, 5, 20, 3, 0, tzinfo=UTC), used_at=late)
    coupon(cups, claimed_at=NOW - timedelta(days=40))  # before the 30 days
    order(used, discount=500, at=NOW - timedelta(hours=2))
    order(cups_used, discount=1250, at=late, status=Order.Status.SHIPPED)
    order(cups_used, discount=9999, at=late, status=Order.Status.CANCELLED)  # coupon back
    # Neither is a use: an unpaid order's coupon, a refunded order's discount.
    unpaid = coupon(tea, claimed_at=late, used_at=NOW - timedelta(hours=1))
    order(unpaid, discount=2000, at=NOW - timedelta(hours=1), status=Order.Status.PENDING_PAYMENT)
    refunded = coupon(cups, claimed_at=late, used_at=NOW - timedelta(hours=1))
    order(refunded, discount=4455, at=NOW - timedelta(hours=1), status=Order.Status.REFUNDED)
    return {"tea": tea, "cups": cups}


def test_the_figures_count_what_happened_per_day_in_the_zone(shop, django_assert_num_queries):
    with django_assert_num_queries(5):
        figures = dashboard_figures(now=NOW, zone=SHANGHAI)

    # a use is a coupon of a paid, not refunded order, on its day of payment
    days = {day.day: (day.claims, day.uses, day.discount) for day in figures.days}
    assert len(figures.days) == 30
    assert (figures.days[0].day, figures.days[-1].day) == (date(2026, 5, 3), date(2026, 6, 1))
    assert days[date(2026, 6, 1)] == (4, 2, 1750)
    assert days[date(2026, 5, 31)] == (1, 0, 0)
    assert days[date(2026, 5, 20)] == (1, 0, 0)
    assert sum(claims for claims, _, _ in days.values()) == 6
    assert [(t.name, t.claims, t.uses) for t in figures.top_templates] == [
        ("Tea", 4, 1),
        ("Cups", 2, 1),
    ]
    assert [(t.name, t.claimed_count, t.total) for t in figures.ending_soon] == [("Tea", 4, 50)]


def test_every_figure_of_used_counts_the_same_coupons(shop, staff_client):
    # the dashboard, the template funnel, its activity chart and the admin API agree: paid,
    # not refunded (the tea's unpaid order holds a coupon marked used: not a use)
    figures = dashboard_figures(now=NOW, zone=SHANGHAI)
    dashboard = {t.name: t.uses for t in figures.top_templates}
    api = {
        row["name"]: row["used_count"]
        for row in staff_client.get("/api/admin/coupons").json()["results"]
    }

    assert dashboard == {"Tea": 1, "Cups": 1}
    assert {name: api[name] for name in dashboard} == dashboard
    assert template_funnel(shop["tea"], now=NOW).used == 1
    activity = template_activity_per_day(shop["tea"], now=NOW, zone=SHANGHAI)
    assert sum(day.uses for day in activity) == 1


def test_the_query_count_does_not_grow_with_the_data(shop, django_assert_num_queries):
    for index in range(12):
        template = CouponTemplateFactory(valid_until=NOW + timedelta(days=1))
        coupon(template, claimed_at=NOW - timedelta(days=index))

    with django_assert_num_queries(5):
        figures = dashboard_figures(now=NOW, zone=SHANGHAI)

    assert len(figures.top_templates) == 10
    assert figures.top_templates[0].name == "Tea"
    assert len(figures.ending_soon) == 10


def test_the_page_draws_the_figures_from_local_files(shop, admin_site):
    page = admin_site.get("/admin/dashboard/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    data = json.loads(re.search(r'id="dashboard-data"[^>]*>(.*?)</script>', page).group(1))
    assert sum(data["claims"]) == 6 and sum(data["uses"]) == 2
    assert sum(data["discount"]) == 17.5  # yuan, as the chart's axis reads
    assert data["top"]["names"] == ["Tea", "Cups"]
    assert data["names"]["discount"] == "优惠金额"
    assert '<span class="total-discount">¥17.50</span>' in page
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', page)
    assert "/static/admin/coupons/echarts/echarts.common.min.js" in scripts
    assert all(src.startswith("/static/") for src in scripts), scripts


def test_staff_who_may_not_read_templates_see_no_figures(shop, client):
    client.force_login(staff_with("orders.view_order"))

    page = client.get("/admin/dashboard/").content.decode()

    assert 'class="dashboard-not-allowed"' in page
    assert "dashboard-data" not in page and "Tea" not in page
