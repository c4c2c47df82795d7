"""The rules on a template's terms, beside the template service (coupons/services/templates.py)
that applies them: which terms freeze once claimed, and the validation of a publish or an edit."""

from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from core import clock
from core.money import format_money
from coupons.errors import (
    TemplateInvalid,
)
from coupons.models import CouponTemplate
from coupons.models.templates import (
    MAX_AMOUNT,
    MAX_COUNT,
    MAX_PERCENT,
    MAX_VALID_DAYS,
    NAME_MAX_LENGTH,
)
from coupons.template_scope_and_code import (
    code_validate,
    exclusions_validate,
    one_of,
    scope_validate,
)
from coupons.terms import TEMPLATE_TERMS

# Coupons already in users' hands would silently change value if these changed. The claim
# window is not here: each coupon carries its own use window, stamped at issue.
FROZEN_ONCE_CLAIMED = (
    "type",
    "value",
    "min_amount",
    "max_discount",
    "valid_days",
    "scope",
    "scope_ids",
    "excluded_product_ids",
    "excluded_category_ids",
    "one_unit_only",
)


def percent_range_message() -> str:
    """Why a percent such as 150 is refused, and what to type."""
    return _("A percent coupon takes 1 to 99 percent off: 15 means 15 percent off (85折).")


def template_terms_validate(
    terms: dict[str, Any], *, current: CouponTemplate | None = None
) -> dict[str, Any]:
    """Check a template's full terms (and, for an edit, the freeze rules against `current`);
    return them cleaned or raise TemplateInvalid naming every bad field. The one place that
    holds the template rules: the API and the Django admin both come through here."""
    clean = dict(terms)
    errors: dict[str, list[str]] = {}

    def fail(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    def check_int(field: str, low: int, high: int, *, message: str | None = None) -> None:
        value = clean.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            fail(field, _("A whole number is required."))
        elif not low <= value <= high:
            fail(
                field,
                message or _("Must be between %(low)s and %(high)s.") % {"low": low, "high": high},
            )

    def check_amount(field: str, low: int) -> None:
        """An amount in cents, said both ways: the admin types money, the API cents."""
        shown = {"low": format_money(low), "high": format_money(MAX_AMOUNT), "max": MAX_AMOUNT}
        message = _("Must be from %(low)s to %(high)s (at most %(max)d cents).") % shown
        check_int(field, low, MAX_AMOUNT, message=message)

    name = clean.get("name")
    if not isinstance(name, str):
        fail("name", _("A string is required."))
    else:
        clean["name"] = name.strip()
        if not 1 <= len(clean["name"]) <= NAME_MAX_LENGTH:
            fail(
                "name",
                _("Must be 1 to %(count)d characters after trimming.") % {"count": NAME_MAX_LENGTH},
            )

    if clean.get("type") not in CouponTemplate.Type.values:
        fail("type", one_of(CouponTemplate.Type.values))
    if clean.get("type") == CouponTemplate.Type.PERCENT:
        check_int("value", 1, MAX_PERCENT, message=percent_range_message())  # the percent off
    else:
        check_amount("value", 1)
    check_amount("min_amount", 0)
    check_int("total", 1, MAX_COUNT)
    check_int("per_user_limit", 1, MAX_COUNT)
    if clean.get("max_discount") is not None:
        check_amount("max_discount", 1)
        if clean.get("type") != CouponTemplate.Type.PERCENT:
            fail("max_discount", _("Only a percent coupon may have a cap; leave it empty."))
    if clean.get("valid_days") is not None:
        check_int("valid_days", 1, MAX_VALID_DAYS)
    scope_validate(clean, fail, current=current)
    exclusions_validate(clean, fail, current=current)
    if not isinstance(clean.get("one_unit_only"), bool):
        fail("one_unit_only", _("true or false is required."))
    code_validate(clean, fail, current=current)
    if clean.get("visibility") not in CouponTemplate.Visibility.values:
        fail("visibility", one_of(CouponTemplate.Visibility.values))
    if clean.get("audience") not in CouponTemplate.Audience.values:
        fail("audience", one_of(CouponTemplate.Audience.values))
    if clean.get("auto_issue") not in CouponTemplate.AutoIssue.values:
        fail("auto_issue", one_of(CouponTemplate.AutoIssue.values))
    check_amount("auto_issue_min_pay", 0)
    if (
        "auto_issue_min_pay" not in errors
        and clean.get("auto_issue") != CouponTemplate.AutoIssue.PAID_ORDER
        and clean["auto_issue_min_pay"] != 0
    ):
        fail("auto_issue_min_pay", _("Only a coupon issued after paid orders has one; use 0."))
    if "value" not in errors and "min_amount" not in errors:
        if clean.get("type") == CouponTemplate.Type.DIRECT and clean["min_amount"] != 0:
            fail("min_amount", _("Must be 0 for a direct coupon."))
        if (
            clean.get("type") == CouponTemplate.Type.THRESHOLD
            and clean["min_amount"] < clean["value"]
        ):
            fail("min_amount", _("Must be at least the value for a threshold coupon."))

    for field in ("valid_from", "valid_until"):
        moment = clean.get(field)
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            fail(field, _("A date-time with a UTC offset is required."))
        else:  # compared at the precision the database keeps
            clean[field] = clock.truncate_to_milliseconds(moment)
    if "valid_from" not in errors and "valid_until" not in errors:
        if clean["valid_from"] >= clean["valid_until"]:
            fail("valid_until", _("Must be after valid_from."))

    if current is not None and current.claimed_count > 0:
        for field in FROZEN_ONCE_CLAIMED:  # scope_ids: both sorted, so compared as sets
            if field not in errors and clean.get(field) != getattr(current, field):
                fail(field, _("Cannot change once the coupon has been claimed."))
        if "total" not in errors and clean["total"] < current.claimed_count:
            fail(
                "total",
                _("Cannot be below the %(count)d already claimed.")
                % {"count": current.claimed_count},
            )

    if errors:
        raise TemplateInvalid(fields=errors)
    return {field: clean[field] for field in TEMPLATE_TERMS}
