"""The admin's home (simpleui's first tab, SIMPLEUI_HOME_PAGE): the dashboard of
backoffice.dashboard drawn with ECharts, served from our own static files (decision 0900).
Whoever may read templates sees the figures; other staff a page that says so."""

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from backoffice.coupon_admin.display import local_datetime
from backoffice.dashboard import DASHBOARD_DAYS, dashboard_figures
from backoffice.staff_actions import StaffAction, staff_may
from core import clock
from core.money import CENTS_PER_UNIT, format_money


def dashboard_view(request: HttpRequest) -> TemplateResponse:
    context = {**admin.site.each_context(request), "title": _("Dashboard")}
    if staff_may(request.user, StaffAction.TEMPLATE_VIEW):
        context.update(dashboard_context())
    return TemplateResponse(request, "admin/coupons/dashboard.html", context)


def dashboard_context() -> dict:
    figures = dashboard_figures(now=clock.now(), zone=timezone.get_current_timezone())
    change_url = "admin:coupons_coupontemplate_change"
    return {
        "days_shown": DASHBOARD_DAYS,
        "totals": {
            "claims": sum(day.claims for day in figures.days),
            "uses": sum(day.uses for day in figures.days),
            "discount": format_money(sum(day.discount for day in figures.days)),
        },
        "top_templates": [
            {**vars(row), "url": reverse(change_url, args=[row.template_id])}
            for row in figures.top_templates
        ],
        "ending_soon": [
            {
                **vars(row),
                "ends": local_datetime(row.valid_until),
                "url": reverse(change_url, args=[row.template_id]),
            }
            for row in figures.ending_soon
        ],
        "running_campaigns": [
            {
                "name": row.name,
                "ends": local_datetime(row.ends_at),
                "budget": format_money(row.budget) or _("no budget"),
                "spent": format_money(row.spent),
                "left": "–" if row.budget is None else format_money(row.budget - row.spent),
                "url": reverse("admin:coupons_campaign_change", args=[row.campaign_id]),
            }
            for row in figures.running_campaigns
        ],
        # What dashboard.js draws (json_script): the days, three series, the legend's names.
        "chart": {
            "days": [date_format(day.day, "m-d") for day in figures.days],
            "claims": [day.claims for day in figures.days],
            "uses": [day.uses for day in figures.days],
            "discount": [day.discount / CENTS_PER_UNIT for day in figures.days],
            "names": {
                "claims": _("claims"),
                "uses": _("uses"),
                "discount": _("discount given"),
            },
            "top": {
                "names": [row.name for row in figures.top_templates],
                "claims": [row.claims for row in figures.top_templates],
                "uses": [row.uses for row in figures.top_templates],
            },
        },
    }
