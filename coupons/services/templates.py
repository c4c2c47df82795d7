"""Coupon templates: publishing, editing and deleting them, and the rules on their terms."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from accounts.staff_actions import Actor, StaffAction, staff_action_check, staff_action_record
from core import clock
from core.money import format_money
from coupons.errors import (
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.models import (
    MAX_AMOUNT,
    MAX_COUNT,
    MAX_PERCENT,
    MAX_VALID_DAYS,
    NAME_MAX_LENGTH,
    CouponTemplate,
)
from coupons.services.terms_cache import next_version, terms_change, terms_publish_new
from coupons.shopper_list import published_terms_changed
from coupons.single_use_codes import SingleUseCode
from coupons.template_scope_and_code import code_validate, one_of, scope_validate
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
    code_validate(clean, fail, current=current)
    if clean.get("visibility") not in CouponTemplate.Visibility.values:
        fail("visibility", one_of(CouponTemplate.Visibility.values))
    if clean.get("audience") not in CouponTemplate.Audience.values:
        fail("audience", one_of(CouponTemplate.Audience.values))
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
    max_discount: int | None = None,
    valid_days: int | None = None,
    scope: str = CouponTemplate.Scope.ALL,
    scope_ids: list[int] | None = None,
    code: str | None = None,
    visibility: str = CouponTemplate.Visibility.PUBLIC,
    audience: str = CouponTemplate.Audience.ALL,
    actor: Actor | None = None,
) -> CouponTemplate:
    """Create a template after validating its terms; `actor` must hold the add permission and
    is recorded. Runs in its own transaction."""
    staff_action_check(actor=actor, action=StaffAction.TEMPLATE_PUBLISH)
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
            "max_discount": max_discount,
            "valid_days": valid_days,
            "scope": scope,
            "scope_ids": [] if scope_ids is None else scope_ids,
            "code": code,
            "visibility": visibility,
            "audience": audience,
        }
    )
    with transaction.atomic():
        with _code_taken_is_invalid():
            template = CouponTemplate.objects.create(**terms)
            published_terms_changed()
        staff_action_record(
            actor=actor,
            action=StaffAction.TEMPLATE_PUBLISH,
            target=template,
            amounts={"total": template.total, "per_user_limit": template.per_user_limit},
        )
    transaction.on_commit(lambda: terms_publish_new(template))
    return template


def coupon_template_edit(
    *, template_id: int, changes: dict[str, Any], actor: Actor | None = None
) -> CouponTemplate:
    """Apply `changes` to a template under its row lock, so the freeze rules see the
    claimed_count a concurrent claim may just have raised; `actor` must hold the change
    permission, and the changed terms are recorded from/to. Runs in its own transaction."""
    staff_action_check(actor=actor, action=StaffAction.TEMPLATE_EDIT)
    unknown = set(changes) - set(TEMPLATE_TERMS)
    if unknown:
        raise TemplateInvalid(fields={field: ["Unknown field."] for field in sorted(unknown)})
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        merged = {field: getattr(template, field) for field in TEMPLATE_TERMS} | changes
        terms = template_terms_validate(merged, current=template)
        _raise_if_below_codes_out(template, total=terms["total"])
        changed = {
            field: [getattr(template, field), value]
            for field, value in terms.items()
            if getattr(template, field) != value
        }
        # Fenced out of Redis before the commit, the new terms published after it (SPEC
        # section 15: a change that makes room takes effect before it returns).
        with terms_change(template):
            stamp = next_version(template.updated_at)  # the terms' version grows
            with _code_taken_is_invalid():
                CouponTemplate.objects.filter(pk=template_id).update(**terms, updated_at=stamp)
            published_terms_changed()  # the shopper list's kept terms, in this transaction
            for field, value in terms.items():
                setattr(template, field, value)
            template.updated_at = stamp
        staff_action_record(
            actor=actor, action=StaffAction.TEMPLATE_EDIT, target=template, amounts=changed
        )
    return template


def _raise_if_below_codes_out(template: CouponTemplate, *, total: int) -> None:
    """Single-use codes never outnumber the remaining total (SPEC section 20): a total may not
    drop below the coupons claimed plus the unused codes out. Under the template's row lock,
    which a creation of codes takes to finish (coupons/services/codes.py)."""
    if not template.has_single_use_codes or total >= template.total:
        return
    unused = SingleUseCode.objects.filter(template_id=template.pk, used_at__isnull=True).count()
    if total < template.claimed_count + unused:
        raise TemplateInvalid(
            fields={
                "total": [
                    _("Cannot be below %(count)d: %(claimed)d claimed and %(unused)d unused codes.")
                    % {
                        "count": template.claimed_count + unused,
                        "claimed": template.claimed_count,
                        "unused": unused,
                    }
                ]
            }
        )


@contextmanager
def _code_taken_is_invalid() -> Iterator[None]:
    """Two templates racing for one code: the unique index refuses the second, which is then
    the same 400 as the check in code_validate would have given."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        if "coupon_template_code_unique" not in str(error):
            raise
        raise TemplateInvalid(
            fields={"code": ["Another coupon already has this code (codes ignore case)."]}
        ) from error


def coupon_template_delete(*, template_id: int, actor: Actor | None = None) -> None:
    """Delete a template that nobody has claimed. Under the row lock a claim cannot slip in
    between the check and the delete; `actor` must hold the delete permission and is
    recorded. Runs in its own transaction."""
    staff_action_check(actor=actor, action=StaffAction.TEMPLATE_DELETE)
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        if template.claimed_count > 0:
            raise TemplateInvalid("A template with claims cannot be deleted.")
        staff_action_record(
            actor=actor,
            action=StaffAction.TEMPLATE_DELETE,
            target=template,
            amounts={"total": template.total},
        )
        with terms_change(template, deleting=True):
            template.delete()
            published_terms_changed()


def coupon_template_pause(*, template_id: int, actor: Actor | None = None) -> CouponTemplate:
    """Stop issuing a template (claims, codes and grants answer `paused`) without ending it;
    coupons already held stay usable. Idempotent: pausing a paused template keeps its
    paused_at. Under the row lock, so a claim decides either before the pause or after it.
    `actor` must hold coupons.pause_coupons; a pause that changed something is recorded.
    Runs in its own transaction."""
    staff_action_check(actor=actor, action=StaffAction.TEMPLATE_PAUSE)
    return _paused_set(template_id=template_id, paused=True, actor=actor)[0]


def coupon_template_resume(*, template_id: int, actor: Actor | None = None) -> CouponTemplate:
    """Issue a paused template again; idempotent. Takes effect before it returns: the
    database decides `paused` (the guarded UPDATE reads it), and the claim's cached terms are
    fenced and published as for an edit (SPEC section 15). `actor` must hold
    coupons.pause_coupons; a resume that changed something is recorded. Runs in its own
    transaction."""
    staff_action_check(actor=actor, action=StaffAction.TEMPLATE_RESUME)
    return _paused_set(template_id=template_id, paused=False, actor=actor)[0]


def coupon_templates_paused_set(
    *, template_ids: list[int], paused: bool, actor: Actor | None = None
) -> int:
    """Pause (or resume) each template as coupon_template_pause (resume) does, one
    transaction each; returns how many changed (the admin's bulk action reports this: a
    template already in that state, or gone meanwhile, is not counted)."""
    action = StaffAction.TEMPLATE_PAUSE if paused else StaffAction.TEMPLATE_RESUME
    staff_action_check(actor=actor, action=action)
    changed = 0
    for template_id in template_ids:
        try:
            changed += _paused_set(template_id=template_id, paused=paused, actor=actor)[1]
        except TemplateNotFound:  # deleted since the list was shown
            continue
    return changed


def _paused_set(
    *, template_id: int, paused: bool, actor: Actor | None
) -> tuple[CouponTemplate, bool]:
    """The template as it now stands, and whether this call changed it."""
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        if (template.paused_at is not None) == paused:
            return template, False
        with terms_change(template):
            stamp = next_version(template.updated_at)  # the terms' version grows
            paused_at = clock.now() if paused else None
            CouponTemplate.objects.filter(pk=template_id).update(
                paused_at=paused_at, updated_at=stamp
            )
            template.paused_at, template.updated_at = paused_at, stamp
            published_terms_changed()  # the list shows `paused` from the next request
        action = StaffAction.TEMPLATE_PAUSE if paused else StaffAction.TEMPLATE_RESUME
        staff_action_record(actor=actor, action=action, target=template)
    return template, True
