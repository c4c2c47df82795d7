"""The checks of a template's scope and code, for the rules on its terms in
coupons/services/templates.py (machinery beside the service, not a service): the scope against
the injected catalog, the code's form and uniqueness."""

import re
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

from core.limits import MAX_BIGINT
from coupons.catalog import scope_catalog
from coupons.models import CouponTemplate
from coupons.models.templates import CODE_PATTERN, MAX_SCOPE_IDS


def one_of(values: list[str]) -> str:
    """The message for a value that is not one of `values`."""
    return _("Must be one of: %(values)s.") % {"values": ", ".join(values)}


def scope_validate(
    clean: dict[str, Any], fail: Callable[[str, str], None], *, current: CouponTemplate | None
) -> None:
    """scope is all (no ids) or categories / products with 1..500 positive ids, which the
    injected catalog knows. The ids are stored sorted and without repeats. Only ids new to the
    template are looked up: one whose product was removed since must not block other edits."""
    scope, ids = clean.get("scope"), clean.get("scope_ids")
    if scope not in CouponTemplate.Scope.values:
        fail("scope", one_of(CouponTemplate.Scope.values))
        return
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_BIGINT for i in ids
    ):
        fail("scope_ids", _("A list of ids (positive whole numbers) is required."))
        return
    if scope == CouponTemplate.Scope.ALL:
        if ids:
            fail("scope_ids", _('Must be empty when scope is "all".'))
        return
    clean["scope_ids"] = ids = sorted(set(ids))
    if not 1 <= len(ids) <= MAX_SCOPE_IDS:
        fail(
            "scope_ids",
            _("Between 1 and %(count)d ids are required for the scope “%(scope)s”.")
            % {"count": MAX_SCOPE_IDS, "scope": CouponTemplate.Scope(scope).label},
        )
        return
    catalog = scope_catalog()
    if catalog is not None:
        kept = set(current.scope_ids) if current is not None and current.scope == scope else set()
        new_ids = sorted(set(ids) - kept)
        unknown = sorted(set(new_ids) - set(catalog.names(scope=scope, ids=new_ids)))
        unknown_text = {
            CouponTemplate.Scope.CATEGORIES: _("Unknown categories: %(ids)s."),
            CouponTemplate.Scope.PRODUCTS: _("Unknown products: %(ids)s."),
        }
        if unknown:
            fail(
                "scope_ids",
                unknown_text[scope] % {"ids": ", ".join(map(str, unknown[:20]))},
            )


EXCLUSIONS = {
    "excluded_product_ids": CouponTemplate.Scope.PRODUCTS,
    "excluded_category_ids": CouponTemplate.Scope.CATEGORIES,
}


def exclusions_validate(
    clean: dict[str, Any], fail: Callable[[str, str], None], *, current: CouponTemplate | None
) -> None:
    """Products and categories a store-wide or category coupon leaves out: lists of up to 500
    ids the catalog knows (stored sorted, without repeats); a coupon of some products names
    what it covers and excludes nothing. As for scope_ids, only ids new to the template are
    looked up."""
    scope = clean.get("scope")
    catalog = scope_catalog()
    for field, kind in EXCLUSIONS.items():
        ids = clean.get(field)
        if ids is None:
            ids = clean[field] = []
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_BIGINT for i in ids
        ):
            fail(field, _("A list of ids (positive whole numbers) is required."))
            continue
        clean[field] = ids = sorted(set(ids))
        if ids and scope == CouponTemplate.Scope.PRODUCTS:
            fail(field, _("A coupon of some products names what it covers: leave this empty."))
            continue
        if len(ids) > MAX_SCOPE_IDS:
            fail(field, _("At most %(count)d ids.") % {"count": MAX_SCOPE_IDS})
            continue
        if catalog is None or not ids:
            continue
        kept = set(getattr(current, field, None) or [])
        new_ids = sorted(set(ids) - kept)
        unknown = sorted(set(new_ids) - set(catalog.names(scope=kind, ids=new_ids)))
        if unknown:
            message = {
                CouponTemplate.Scope.CATEGORIES: _("Unknown categories: %(ids)s."),
                CouponTemplate.Scope.PRODUCTS: _("Unknown products: %(ids)s."),
            }[kind]
            fail(field, message % {"ids": ", ".join(map(str, unknown[:20]))})


def code_validate(
    clean: dict[str, Any], fail: Callable[[str, str], None], *, current: CouponTemplate | None
) -> None:
    """A code is 4..32 of A-Z a-z 0-9 _ -, unique without regard to case. The unique index on
    code_key (the upper-cased code) holds this against races; this check names the field."""
    code = clean.get("code")
    if code is None:
        return
    if not isinstance(code, str) or not re.fullmatch(CODE_PATTERN, code):
        fail("code", _("Must be 4 to 32 characters of A-Z, a-z, 0-9, _ and -."))
        return
    taken = CouponTemplate.objects.filter(code_key=code.upper())
    if current is not None:
        taken = taken.exclude(pk=current.pk)
    if taken.exists():
        fail("code", _("Another coupon already has this code (codes ignore case)."))
