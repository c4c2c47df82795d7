"""How the coupon admin shows things: dates in the operator's zone, money terms in words,
the labels of types, states and coupon statuses, and the orders app's lookup."""

from django.conf import settings
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.money import format_money
from coupons.models import CouponTemplate

RECENT_ROWS = 10


def local_datetime(moment) -> str:
    """A stored UTC instant as the operator reads it: TIME_ZONE, the active language's format."""
    if moment is None:
        return ""
    return date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


def orders_lookup():
    """The orders app's answer to "which orders used these coupons" (see ports.CouponOrder)."""
    return import_string(settings.COUPON_ADMIN_ORDERS_LOOKUP)


TYPE_LABELS = {
    CouponTemplate.Type.DIRECT: gettext_lazy("direct (flat amount off)"),
    CouponTemplate.Type.THRESHOLD: gettext_lazy("threshold (spend X, get Y off)"),
    CouponTemplate.Type.PERCENT: gettext_lazy("percent off"),
}


STATE_LABELS = {
    "not_started": gettext_lazy("not started"),
    "active": gettext_lazy("active"),
    "sold_out": gettext_lazy("sold out"),
    "ended": gettext_lazy("ended"),
    "paused": gettext_lazy("paused"),
}


def terms_text(template: CouponTemplate) -> str:
    """The discount in words: "¥5.00 off", "¥50.00 off orders of ¥200.00 or more",
    "15% off, at most ¥20.00"."""
    if template.type == CouponTemplate.Type.PERCENT:
        text = _("%(percent)s%% off") % {"percent": template.value}
        if template.max_discount:
            text = _("%(terms)s, at most %(cap)s") % {
                "terms": text,
                "cap": format_money(template.max_discount),
            }
    else:
        text = _("%(value)s off") % {"value": format_money(template.value)}
    if template.min_amount:
        text = _("%(terms)s on orders of %(minimum)s or more") % {
            "terms": text,
            "minimum": format_money(template.min_amount),
        }
    return text


def rate_text(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1%}"


COUPON_STATUS_LABELS = {
    "unused": gettext_lazy("unused"),
    "used": gettext_lazy("used"),
    "expired": gettext_lazy("expired"),
}
