"""Coupon templates: publishing, editing, pausing and deleting them (the rules on their terms:
coupons/template_terms_rules.py)."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from core import clock
from core.staff_audit import NOT_STAFF, StaffAudit
from coupons.errors import (
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.issuing import next_version, terms_change, terms_publish_new
from coupons.models import (
    CouponTemplate,
)
from coupons.models.single_use_codes import SingleUseCode
from coupons.shopper_list import published_terms_changed
from coupons.template_terms_rules import template_terms_validate
from coupons.terms import TEMPLATE_TERMS


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
    excluded_product_ids: list[int] | None = None,
    excluded_category_ids: list[int] | None = None,
    one_unit_only: bool = False,
    code: str | None = None,
    visibility: str = CouponTemplate.Visibility.PUBLIC,
    audience: str = CouponTemplate.Audience.ALL,
    auto_issue: str = CouponTemplate.AutoIssue.NONE,
    auto_issue_min_pay: int = 0,
    audit: StaffAudit = NOT_STAFF,
) -> CouponTemplate:
    """Create a template after validating its terms; the door's `audit` asks the add
    permission and records the terms. Runs in its own transaction."""
    audit.check()
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
            "excluded_product_ids": excluded_product_ids or [],
            "excluded_category_ids": excluded_category_ids or [],
            "one_unit_only": one_unit_only,
            "code": code,
            "visibility": visibility,
            "audience": audience,
            "auto_issue": auto_issue,
            "auto_issue_min_pay": auto_issue_min_pay,
        }
    )
    with transaction.atomic():
        with _code_taken_is_invalid():
            template = CouponTemplate.objects.create(**terms)
            published_terms_changed()
        audit.record(template, {term: getattr(template, term) for term in TEMPLATE_TERMS})
    transaction.on_commit(lambda: terms_publish_new(template))
    return template


def coupon_template_edit(
    *, template_id: int, changes: dict[str, Any], audit: StaffAudit = NOT_STAFF
) -> CouponTemplate:
    """Apply `changes` to a template under its row lock, so the freeze rules see the
    claimed_count a concurrent claim may just have raised; the door's `audit` asks the
    change permission and records the changed terms from/to. Runs in its own transaction."""
    audit.check()
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
        audit.record(template, changed)
    return template


def _raise_if_below_codes_out(template: CouponTemplate, *, total: int) -> None:
    """Single-use codes never outnumber the remaining total (SPEC section 20): a total may not
    drop below the coupons claimed plus the unused codes out. Under the template's row lock,
    which a creation of codes takes to finish (coupons/services/codes.py)."""
    if total >= template.total:
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


def coupon_template_delete(*, template_id: int, audit: StaffAudit = NOT_STAFF) -> None:
    """Delete a template that nobody has claimed. Under the row lock a claim cannot slip in
    between the check and the delete; the door's `audit` asks the delete permission
    and records it. Runs in its own transaction."""
    audit.check()
    with transaction.atomic():
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            raise TemplateNotFound()
        if template.claimed_count > 0:
            raise TemplateInvalid("A template with claims cannot be deleted.")
        audit.record(template, {"total": template.total})
        with terms_change(template, deleting=True):
            template.delete()
            published_terms_changed()


def coupon_template_pause(*, template_id: int, audit: StaffAudit = NOT_STAFF) -> CouponTemplate:
    """Stop issuing a template (claims, codes and grants answer `paused`) without ending it;
    coupons already held stay usable. Idempotent: pausing a paused template keeps its
    paused_at. Under the row lock, so a claim decides either before the pause or after it.
    The door's `audit` asks coupons.pause_coupons; a pause that changed something is recorded.
    Runs in its own transaction."""
    audit.check()
    return _paused_set(template_id=template_id, paused=True, audit=audit)[0]


def coupon_template_resume(*, template_id: int, audit: StaffAudit = NOT_STAFF) -> CouponTemplate:
    """Issue a paused template again; idempotent. Takes effect before it returns: the
    database decides `paused` (the guarded UPDATE reads it), and the claim's cached terms are
    fenced and published as for an edit (SPEC section 15). The door's `audit` asks
    coupons.pause_coupons; a resume that changed something is recorded. Runs in its own
    transaction."""
    audit.check()
    return _paused_set(template_id=template_id, paused=False, audit=audit)[0]


def coupon_templates_paused_set(
    *, template_ids: list[int], paused: bool, audit: StaffAudit = NOT_STAFF
) -> int:
    """Pause (or resume) each template as coupon_template_pause (resume) does, one
    transaction each; returns how many changed (the admin's bulk action reports this: a
    template already in that state, or gone meanwhile, is not counted)."""
    audit.check()
    changed = 0
    for template_id in template_ids:
        try:
            changed += _paused_set(template_id=template_id, paused=paused, audit=audit)[1]
        except TemplateNotFound:  # deleted since the list was shown
            continue
    return changed


def _paused_set(
    *, template_id: int, paused: bool, audit: StaffAudit
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
        audit.record(template)
    return template, True
