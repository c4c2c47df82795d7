"""A recorded staff action in the reader's language (backoffice/staff_actions.py records it as
its action and amounts, not as text, so the history reads in whichever language the admin is
shown in). Entries the Django admin wrote itself read as Django renders them."""

from typing import Any

from django.contrib.admin.models import LogEntry
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.staff_actions import StaffAction, recorded_action
from core.money import format_money
from coupons.catalog import scope_catalog
from coupons.models import CouponTemplate

ACTION_LABELS: dict[StaffAction, Promise] = {
    StaffAction.TEMPLATE_PUBLISH: gettext_lazy("Publish a coupon template"),
    StaffAction.TEMPLATE_EDIT: gettext_lazy("Edit a coupon template"),
    StaffAction.TEMPLATE_DELETE: gettext_lazy("Delete a coupon template"),
    StaffAction.TEMPLATE_PAUSE: gettext_lazy("Pause a coupon template"),
    StaffAction.TEMPLATE_RESUME: gettext_lazy("Resume a coupon template"),
    StaffAction.COUPONS_GRANT: gettext_lazy("Grant coupons"),
    StaffAction.COUPONS_EXPORT: gettext_lazy("Export coupons"),
    StaffAction.TEMPLATES_EXPORT: gettext_lazy("Export coupon templates"),
    StaffAction.CODES_CREATE: gettext_lazy("Create single-use codes"),
    StaffAction.CODES_IMPORT: gettext_lazy("Import merchant codes"),
    StaffAction.CODES_EXPORT: gettext_lazy("Export single-use codes"),
    StaffAction.CAMPAIGN_CREATE: gettext_lazy("Create a campaign"),
    StaffAction.CAMPAIGN_EDIT: gettext_lazy("Edit a campaign"),
    StaffAction.STOCK_ADJUST: gettext_lazy("Adjust stock"),
    StaffAction.ORDER_CANCEL: gettext_lazy("Cancel an order"),
    StaffAction.ORDER_REFUND: gettext_lazy("Refund an order"),
    StaffAction.STAFF_MANAGE: gettext_lazy("Manage staff access"),
}

GRANT_OUTCOMES = {
    "granted": gettext_lazy("granted"),
    "limit_reached": gettext_lazy("per-user limit reached"),
    "sold_out": gettext_lazy("sold out"),
    "unknown_user": gettext_lazy("unknown user"),
    "already_granted": gettext_lazy("already granted for this reason"),
    "ended": gettext_lazy("ended"),
    "paused": gettext_lazy("paused"),
    "not_eligible": gettext_lazy("not a new customer"),
}


def audit_message(entry: LogEntry) -> str:
    """What `entry` records, as a sentence with its amounts."""
    recorded = recorded_action(entry)
    if recorded is None:
        return str(entry.get_change_message())
    action, amounts = recorded
    try:
        return _sentence(entry, action, amounts)
    except (KeyError, TypeError, ValueError):  # an entry written by an older version
        return str(ACTION_LABELS.get(action, action.value))


def _sentence(entry: LogEntry, action: StaffAction, amounts: dict[str, Any]) -> str:
    match action:
        case StaffAction.TEMPLATE_PUBLISH:
            if "type" not in amounts:  # written before every term was recorded
                return _("Published: total %(total)s, per-user limit %(limit)s.") % {
                    "total": amounts["total"],
                    "limit": amounts["per_user_limit"],
                }
            terms = "; ".join(
                _("%(field)s: %(value)s")
                % {
                    "field": _field_name(entry, field),
                    "value": _term_shown(entry, field, value, amounts.get("type")),
                }
                for field, value in amounts.items()
            )
            return _("Published: %(terms)s.") % {"terms": terms}
        case StaffAction.TEMPLATE_EDIT:
            if not amounts:
                return _("Saved without changes.")
            kind = amounts["type"][1] if "type" in amounts else _current(entry, "type")
            changes = "; ".join(
                _("%(field)s from %(old)s to %(new)s")
                % {
                    "field": _field_name(entry, field),
                    "old": _term_shown(entry, field, old, kind),
                    "new": _term_shown(entry, field, new, kind),
                }
                for field, (old, new) in amounts.items()
            )
            return _("Changed %(changes)s.") % {"changes": changes}
        case StaffAction.TEMPLATE_DELETE:
            return _("Deleted (total %(total)s, nothing claimed).") % {"total": amounts["total"]}
        case StaffAction.TEMPLATE_PAUSE:
            return _("Paused: nothing is issued until resumed.")
        case StaffAction.TEMPLATE_RESUME:
            return _("Resumed issuing.")
        case StaffAction.COUPONS_GRANT:
            outcomes = "; ".join(
                f"{GRANT_OUTCOMES.get(outcome, outcome)}: {count}"
                for outcome, count in amounts["outcomes"].items()
            )
            return _("Granted to %(count)d users, reason “%(reason)s”: %(counts)s.") % {
                "count": amounts["users"],
                "reason": amounts["reason"],
                "counts": outcomes,
            }
        case StaffAction.COUPONS_EXPORT:
            return _("Exported %(count)s coupons (CSV).") % {"count": amounts["count"]}
        case StaffAction.CODES_CREATE:
            created = _("Created %(count)s single-use codes.") % {"count": amounts["count"]}
            if not amounts.get("codes_only"):
                return created
            codes_only = _("The template is issued by single-use codes only.")
            return f"{created} {codes_only}"
        case StaffAction.CODES_IMPORT:
            imported = _("Imported %(count)s merchant codes from %(file)s.") % {
                "count": amounts["count"],
                "file": amounts["file"],
            }
            if not amounts.get("codes_only"):  # the staff member's choice (SPEC section 25)
                kept = _("The template keeps its other ways in (the shop, its code).")
                return f"{imported} {kept}"
            codes_only = _("The template is issued by single-use codes only.")
            return f"{imported} {codes_only}"
        case StaffAction.CODES_EXPORT:
            return _("Exported %(count)s single-use codes (%(format)s).") % {
                "count": amounts["count"],
                "format": amounts.get("format", "CSV"),
            }
        case StaffAction.TEMPLATES_EXPORT:
            return _("Exported %(count)s coupon templates (%(format)s).") % {
                "count": amounts["count"],
                "format": amounts["format"],
            }
        case StaffAction.STOCK_ADJUST:
            return _("Stock adjusted by %(change)s, to %(stock)s.") % {
                "change": f"{int(amounts['change']):+d}",
                "stock": amounts["stock"],
            }
        case StaffAction.ORDER_CANCEL:
            coupon = (
                _("coupon returned") if amounts["coupon_returned"] else _("no coupon to return")
            )
            return _("Cancelled by staff (%(pay)s to pay): stock returned, %(coupon)s.") % {
                "pay": format_money(amounts["pay_amount"]),
                "coupon": coupon,
            }
        case StaffAction.ORDER_REFUND:
            coupon = {
                "returned": _("coupon returned"),
                "kept": _("coupon not returned: its window has closed"),
                "kept_partial": _("coupon kept: the order is not refunded whole"),
                "none": _("no coupon to return"),
            }[amounts["coupon"]]
            # Entries written before partial refunds name the whole pay amount, no reason.
            refunded = _("Refunded %(paid)s: %(units)s units back in stock, %(coupon)s.") % {
                "paid": format_money(amounts.get("amount", amounts.get("pay_amount", 0))),
                "units": sum(amounts["stock_returned"].values()),
                "coupon": coupon,
            }
            if "reason" not in amounts:
                return refunded
            scope = _("The whole order.") if amounts["whole"] else _("Some lines.")
            reason = _("Reason: %(reason)s") % {"reason": amounts["reason"]}
            return f"{refunded} {scope} {reason}"
        case StaffAction.CAMPAIGN_CREATE:
            terms = "; ".join(
                _("%(field)s: %(value)s")
                % {
                    "field": _field_name(entry, field),
                    "value": _campaign_term(entry, field, amounts[field]),
                }
                for field in ("name", "starts_at", "ends_at", "budget")
            )
            templates = _("templates: %(ids)s") % {"ids": _template_names(amounts["templates"])}
            return _("Created the campaign: %(terms)s; %(templates)s.") % {
                "terms": terms,
                "templates": templates,
            }
        case StaffAction.CAMPAIGN_EDIT:
            edits = [
                _("%(field)s from %(old)s to %(new)s")
                % {
                    "field": _field_name(entry, field),
                    "old": _campaign_term(entry, field, old),
                    "new": _campaign_term(entry, field, new),
                }
                for field, (old, new) in amounts.items()
                if field != "templates"
            ]
            if "templates" in amounts:
                edits.append(
                    _("templates: %(ids)s") % {"ids": _template_names(amounts["templates"])}
                )
            return _("Changed the campaign: %(changes)s.") % {"changes": "; ".join(edits)}
        case StaffAction.STAFF_MANAGE:
            changes = "; ".join(
                _("%(field)s from %(old)s to %(new)s")
                % {"field": _field_name(entry, field), "old": _shown(old), "new": _shown(new)}
                for field, (old, new) in amounts.items()
            )
            return _("Staff access changed: %(changes)s.") % {"changes": changes}
    return str(ACTION_LABELS.get(action, action.value))


def _campaign_term(entry: LogEntry, field: str, value: Any) -> str:
    if field == "budget" and value is None:
        return _("no budget")
    return _term_shown(entry, field, value, None)


def _field_name(entry: LogEntry, field: str) -> str:
    model = entry.content_type.model_class() if entry.content_type is not None else None
    if model is None:
        return field
    try:
        return str(getattr(model._meta.get_field(field), "verbose_name", field))
    except FieldDoesNotExist:
        return field


def _term_shown(entry: LogEntry, field: str, value: Any, template_type: str | None) -> str:
    """A recorded term as the form shows it: money in yuan (the terms the model names as
    money), a choice by its label, a time in TIME_ZONE; anything else as it is."""
    model = entry.content_type.model_class() if entry.content_type is not None else None
    if model is None or value is None or value == "":
        return _shown(value)
    if isinstance(value, list) and field in CATALOG_ID_LISTS:
        kind = CATALOG_ID_LISTS[field] or _current(entry, "scope")
        return _named(value, catalog_names(kind, value))
    money_terms = getattr(model, "money_terms", None)
    if money_terms is not None and field in money_terms(template_type):
        return format_money(int(value))
    try:
        model_field = model._meta.get_field(field)
    except FieldDoesNotExist:
        return _shown(value)
    choices = dict(getattr(model_field, "flatchoices", None) or ())
    if isinstance(value, str | int) and value in choices:
        return str(choices[value])
    if isinstance(model_field, models.DateTimeField) and isinstance(value, str):
        moment = parse_datetime(value)
        if moment is not None:
            return date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")
    return _shown(value)


# Terms that list catalog ids, and the kind of what they name (None: the template's scope).
CATALOG_ID_LISTS = {
    "scope_ids": None,
    "excluded_category_ids": "categories",
    "excluded_product_ids": "products",
}


def catalog_names(kind: str | None, ids: list) -> dict[int, str]:
    catalog = scope_catalog()
    if catalog is None or kind not in ("categories", "products") or not ids:
        return {}
    return catalog.names(scope=kind, ids=[pk for pk in ids if isinstance(pk, int)])


def _template_names(ids: list) -> str:
    names = dict(CouponTemplate.objects.filter(pk__in=ids).values_list("pk", "name"))
    return _named(ids, names)


def _named(ids: list, names: dict[int, str]) -> str:
    """Ids by name, in their order; one that no longer exists as #id."""
    return "、".join(names.get(pk, f"#{pk}") for pk in ids) or "–"


def _current(entry: LogEntry, field: str) -> Any:
    """The recorded object's `field` as it is now (None if it is gone)."""
    model = entry.content_type.model_class() if entry.content_type is not None else None
    if model is None:
        return None
    return model._default_manager.filter(pk=entry.object_id).values_list(field, flat=True).first()


def _shown(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "–"
    if isinstance(value, bool):  # is_staff, a one-unit coupon: words, not "True"
        return _("yes") if value else _("no")
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)
