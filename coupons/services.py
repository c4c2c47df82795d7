"""Every write to coupons. Transactions live here; views and the admin only call these."""

from datetime import datetime
from typing import Any

from django.db import transaction

from coupons.errors import TemplateInvalid, TemplateNotFound
from coupons.models import MAX_AMOUNT, MAX_COUNT, NAME_MAX_LENGTH, CouponTemplate

TEMPLATE_TERMS = (
    "name",
    "type",
    "value",
    "min_amount",
    "total",
    "per_user_limit",
    "valid_from",
    "valid_until",
)
# Coupons already in users' hands would silently change value if these changed.
FROZEN_ONCE_CLAIMED = ("type", "value", "min_amount")


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

    def check_int(field: str, low: int, high: int) -> None:
        value = clean.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            fail(field, "A whole number is required.")
        elif not low <= value <= high:
            fail(field, f"Must be between {low} and {high}.")

    name = clean.get("name")
    if not isinstance(name, str):
        fail("name", "A string is required.")
    else:
        clean["name"] = name.strip()
        if not 1 <= len(clean["name"]) <= NAME_MAX_LENGTH:
            fail("name", f"Must be 1 to {NAME_MAX_LENGTH} characters after trimming.")

    if clean.get("type") not in CouponTemplate.Type.values:
        fail("type", f"Must be one of: {', '.join(CouponTemplate.Type.values)}.")
    check_int("value", 1, MAX_AMOUNT)
    check_int("min_amount", 0, MAX_AMOUNT)
    check_int("total", 1, MAX_COUNT)
    check_int("per_user_limit", 1, MAX_COUNT)
    if "value" not in errors and "min_amount" not in errors:
        if clean.get("type") == CouponTemplate.Type.DIRECT and clean["min_amount"] != 0:
            fail("min_amount", "Must be 0 for a direct coupon.")
        if (
            clean.get("type") == CouponTemplate.Type.THRESHOLD
            and clean["min_amount"] < clean["value"]
        ):
            fail("min_amount", "Must be at least the value for a threshold coupon.")

    for field in ("valid_from", "valid_until"):
        moment = clean.get(field)
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            fail(field, "A date-time with a UTC offset is required.")
    if "valid_from" not in errors and "valid_until" not in errors:
        if clean["valid_from"] >= clean["valid_until"]:
            fail("valid_until", "Must be after valid_from.")

    if current is not None and current.claimed_count > 0:
        for field in FROZEN_ONCE_CLAIMED:
            if field not in errors and clean.get(field) != getattr(current, field):
                fail(field, "Cannot change once the coupon has been claimed.")
        if "total" not in errors and clean["total"] < current.claimed_count:
            fail("total", f"Cannot be below the {current.claimed_count} already claimed.")

    if errors:
        raise TemplateInvalid(fields=errors)
    return {field: clean[field] for field in TEMPLATE_TERMS}


def coupon_template_publish(
    *,
    name: str,
    type: str,
    value: int,
    total: int,
    valid_from: datetime,
    valid_until: datetime,
    min_amount: int = 0,
    per_user_limit: int = 1,
) -> CouponTemplate:
    """Create a template after validating its terms. Runs in its own transaction."""
    terms = template_terms_validate(
        {
            "name": name,
            "type": type,
            "value": value,
            "min_amount": min_amount,
            "total": total,
            "per_user_limit": per_user_limit,
            "valid_from": valid_from,
            "valid_until": valid_until,
        }
    )
    return CouponTemplate.objects.create(**terms)


def coupon_template_edit(*, template_id: int, changes: dict[str, Any]) -> CouponTemplate:
    """Apply `changes` to a template under its row lock, so the freeze rules see the
    claimed_count a concurrent claim may just have raised. Runs in its own transaction."""
    unknown = set(changes) - set(TEMPLATE_TERMS)
    if unknown:
        raise TemplateInvalid(fields={field: ["Unknown field."] for field in sorted(unknown)})
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        merged = {field: getattr(template, field) for field in TEMPLATE_TERMS} | changes
        terms = template_terms_validate(merged, current=template)
        for field, value in terms.items():
            setattr(template, field, value)
        template.save(update_fields=[*TEMPLATE_TERMS, "updated_at"])
    return template


def coupon_template_delete(*, template_id: int) -> None:
    """Delete a template that nobody has claimed. The conditional DELETE re-checks
    claimed_count after any claim holding the row lock commits."""
    deleted, _ = CouponTemplate.objects.filter(pk=template_id, claimed_count=0).delete()
    if not deleted:
        if CouponTemplate.objects.filter(pk=template_id).exists():
            raise TemplateInvalid("A template with claims cannot be deleted.")
        raise TemplateNotFound()
