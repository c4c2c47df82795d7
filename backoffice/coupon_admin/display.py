"""How the coupon admin shows things: dates in the operator's zone, money terms in words,
the labels of types, states and coupon statuses, and the orders app's lookup."""

from collections.abc import Collection, Iterable

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy

from backoffice import reports
from core.money import format_money
from coupons import selectors
from coupons.catalog import scope_catalog
from coupons.grant_reasons import event_reason_read
from coupons.models import CouponTemplate, UserCoupon

RECENT_ROWS = 10


def local_datetime(moment) -> str:
    """A stored UTC instant as the operator reads it: TIME_ZONE, the active language's format."""
    if moment is None:
        return ""
    return date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


TYPE_LABELS = {
    CouponTemplate.Type.DIRECT: gettext_lazy("direct (flat amount off)"),
    CouponTemplate.Type.THRESHOLD: gettext_lazy("threshold (spend X, get Y off)"),
    CouponTemplate.Type.PERCENT: gettext_lazy("percent off"),
}


# "active" in a context of its own: Django's User.is_active is labelled "active" too, and took
# this label (进行中, "under way") on the user form.
STATE_LABELS = {
    "not_started": gettext_lazy("not started"),
    "active": pgettext_lazy("coupon template state", "active"),
    "sold_out": gettext_lazy("sold out"),
    "ended": gettext_lazy("ended"),
    "paused": gettext_lazy("paused"),
}


def reason_text(reason: str | None) -> str:
    """A coupon's reason as an operator reads it: an event's in words ("sign-up coupon",
    "earned by paid order 6"), a staff member's as typed, "–" for none."""
    event = event_reason_read(reason)
    if event is None:
        return reason or "–"
    kind, order_id = event
    if kind == "signup":
        return _("sign-up coupon")
    return _("earned by paid order %(order)s") % {"order": order_id}


def zhe(percent_off: int) -> str:
    """15% off is 85折, 50% off is 5折 (折 counts tenths of the price paid)."""
    paid = 100 - percent_off
    return str(paid // 10) if paid % 10 == 0 else str(paid)


def terms_text(template: CouponTemplate) -> str:
    """The discount in words: "¥5.00 off", "¥50.00 off orders of ¥200.00 or more",
    "15% off, at most ¥20.00"."""
    if template.type == CouponTemplate.Type.PERCENT:
        text = _("%(percent)s%% off, %(zhe)s折") % {
            "percent": template.value,
            "zhe": zhe(template.value),
        }
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


def scope_text(template: CouponTemplate, names: dict[str, dict[int, str]] | None = None) -> str:
    """ "The whole store", or the categories or products by name, then what it leaves out and
    whether it takes one unit: "全店通用，不含分类：厨具；仅限一件". An id the catalog no longer
    knows is shown as #id. `names` (scope kind -> id -> name) saves the lookups when the caller
    has them already."""
    if names is None:
        names = catalog_names([template])
    text = str(template.get_scope_display())
    if template.scope != CouponTemplate.Scope.ALL and template.scope_ids:
        listed = _listed(template.scope_ids, names.get(template.scope, {}))
        text = _("%(scope)s: %(listed)s") % {"scope": text, "listed": listed}
    excluded = [
        _("%(kind)s %(listed)s") % {"kind": label, "listed": _listed(ids, names.get(kind, {}))}
        for kind, label, ids in (
            (CouponTemplate.Scope.CATEGORIES, _("categories"), template.excluded_category_ids),
            (CouponTemplate.Scope.PRODUCTS, _("products"), template.excluded_product_ids),
        )
        if ids
    ]
    if excluded:
        text = _("%(scope)s, except %(excluded)s") % {
            "scope": text,
            "excluded": _("; ").join(excluded),
        }
    if template.one_unit_only:
        text = _("%(scope)s; one unit only") % {"scope": text}
    return text


def _listed(ids: Iterable[int], names: dict[int, str]) -> str:
    return "、".join(names.get(pk, f"#{pk}") for pk in ids)


def catalog_names(templates: Iterable[CouponTemplate]) -> dict[str, dict[int, str]]:
    """The names of every category and product these templates name (their scope and what
    they exclude): one catalog lookup per kind, whatever the number of templates."""
    wanted: dict[str, set[int]] = {
        CouponTemplate.Scope.CATEGORIES: set(),
        CouponTemplate.Scope.PRODUCTS: set(),
    }
    for template in templates:
        if template.scope in wanted:
            wanted[template.scope].update(template.scope_ids)
        wanted[CouponTemplate.Scope.CATEGORIES].update(template.excluded_category_ids)
        wanted[CouponTemplate.Scope.PRODUCTS].update(template.excluded_product_ids)
    catalog = scope_catalog()
    return {
        kind: catalog.names(scope=kind, ids=ids) if catalog and ids else {}
        for kind, ids in wanted.items()
    }


def attach_scope_texts(templates: Iterable[CouponTemplate]) -> None:
    """Set `scope_shown` on each template of a list page, with one catalog lookup per kind
    for the whole page rather than one per row."""
    templates = list(templates)
    names = catalog_names(templates)
    for template in templates:
        # The list page's own attribute, read back with getattr (coupon_admin/templates.py).
        template.scope_shown = scope_text(template, names)  # type: ignore[attr-defined]


def issued_by_text(template: CouponTemplate) -> str:
    """How shoppers get it: by an event (sign-up, a paid order over an amount), single-use
    codes only, the shop, or a code or a grant; and for whom, when only new customers."""
    if template.auto_issue == CouponTemplate.AutoIssue.SIGNUP:
        text = _("on sign-up")
    elif template.auto_issue == CouponTemplate.AutoIssue.PAID_ORDER:
        text = _("after a paid order")
        if template.auto_issue_min_pay:
            minimum = format_money(template.auto_issue_min_pay)
            text = _("after a paid order of %(minimum)s or more") % {"minimum": minimum}
    elif template.has_single_use_codes:
        text = _("single-use codes only")
    elif template.visibility == CouponTemplate.Visibility.PUBLIC:
        text = _("shop")
    else:
        text = _("code or grant")
    if template.audience == CouponTemplate.Audience.NEW_CUSTOMERS:
        text = _("%(way)s; new customers only") % {"way": text}
    return text


def shown_status(coupon: UserCoupon, *, now, paid: Collection[int] | None = None) -> str:
    """A coupon's status as the back office shows it everywhere (the records page, the coupon
    pages, the CSV): "used" only when a paid order used it (SPEC section 20), "used, order not
    paid" while only an unpaid order holds it, as the funnel counts it. `paid`: the coupons of
    a whole page a paid order used (reports.coupons_paid_for), else one lookup here."""
    status = selectors.derived_status(coupon, now=now)
    if status != "used":
        return status
    if paid is None:
        paid = reports.coupons_paid_for([coupon.pk])
    return status if coupon.pk in paid else "used_unpaid"


def rate_text(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1%}"


COUPON_STATUS_LABELS = {
    "unused": gettext_lazy("unused"),
    "used": gettext_lazy("used"),
    "expired": gettext_lazy("expired"),
    # Used by an order not paid for (awaiting payment, or refunded after its window closed).
    "used_unpaid": gettext_lazy("used, order not paid"),
}
