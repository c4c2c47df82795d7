"""The template's admin form: money typed as money, frozen terms refused once claimed; every
rule on the values is the service's (coupons.services.templates)."""

from django import forms
from django.contrib.admin import widgets
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.coupon_admin.display import zhe
from core.admin_fields import MoneyField
from core.limits import is_id_text
from core.money import MoneyInvalid, format_cents, parse_money
from coupons import template_terms_rules
from coupons.catalog import scope_catalog
from coupons.errors import TemplateInvalid
from coupons.models import CouponTemplate
from coupons.models.templates import MAX_AMOUNT, MAX_PERCENT
from coupons.services import templates


class IdListField(forms.CharField):
    """scope_ids typed as "3, 7, 12"; the rules on the list are the service's."""

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        parts = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
        if not all(is_id_text(part) for part in parts):
            raise forms.ValidationError(_("Ids separated by commas, e.g. 3, 7, 12."))
        return [int(part) for part in parts]


class SecondsSplitDateTime(widgets.AdminSplitDateTime):
    """The admin's date and time boxes, the time with its seconds: zh-hans formats times as
    %H:%M first, so saving a template unchanged moved 23:59:59 to 23:59:00 (and logged a
    change nobody made)."""

    def __init__(self, attrs=None):
        super().__init__(attrs)
        self.widgets[1].format = "%H:%M:%S"


class ScopePicker(forms.TypedMultipleChoiceField):
    """Categories or products chosen by name, with the admin's filter box to search them
    (the choices come from the injected catalog, coupons.catalog)."""

    def __init__(self, *, label, **kwargs):
        super().__init__(
            label=label,
            coerce=int,
            required=False,
            widget=widgets.FilteredSelectMultiple(label, is_stacked=False),
            **kwargs,
        )


DEEP_DISCOUNT_PERCENT = 50

# The exclusions' fields and what their choices are.
EXCLUSION_PICKERS = {"excluded_category_ids": "categories", "excluded_product_ids": "products"}

SCOPE_PICKERS: dict[str, str] = {
    CouponTemplate.Scope.CATEGORIES: "scope_categories",
    CouponTemplate.Scope.PRODUCTS: "scope_products",
}


class CouponTemplateForm(forms.ModelForm):
    # Money off (typed as currency) for direct and threshold coupons, the percent for percent
    # ones: parsed in clean(), once the type is known.
    value = forms.CharField(
        label=gettext_lazy("value"),
        max_length=40,
        help_text=gettext_lazy(
            "Money off, e.g. 50.00. For a percent coupon, the percent OFF, a whole number 1 to "
            "99: 15 takes 15%, so the price becomes 85折; for 85折 type 15, not 85."
        ),
    )
    # An operator who thinks in 折 types 85 for 85折, which here is 85% off: more than half
    # off must be confirmed (DEEP_DISCOUNT_PERCENT), and the refusal says what to type instead.
    confirm_deep_discount = forms.BooleanField(
        label=gettext_lazy("more than half off, on purpose"),
        required=False,
        help_text=gettext_lazy(
            "Needed to save a percent coupon taking half the price or more (5折 or less)."
        ),
    )
    min_amount = MoneyField(
        label=gettext_lazy("minimum order"),
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("The order total needed (threshold and percent), e.g. 200.00."),
    )
    auto_issue_min_pay = MoneyField(
        label=gettext_lazy("minimum paid amount"),
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("After a paid order: the least paid that earns it (满额返券)."),
    )
    max_discount = MoneyField(
        label=gettext_lazy("maximum discount"),
        min_cents=1,
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("Percent coupons only: the cap, e.g. 20.00 (empty: no cap)."),
    )
    scope_ids = IdListField(
        label=gettext_lazy("scope ids"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=gettext_lazy(
            "Category or product ids, separated by commas (empty for the whole store)."
        ),
    )
    # With a catalog (the usual case) these replace scope_ids: see __init__.
    scope_categories = ScopePicker(
        label=gettext_lazy("categories in scope"),
        help_text=gettext_lazy("For the scope “Products of some categories”."),
    )
    scope_products = ScopePicker(
        label=gettext_lazy("products in scope"),
        help_text=gettext_lazy("For the scope “Some products”."),
    )
    # Chosen by name like the scope (a list of ids typed by hand without a catalog).
    excluded_category_ids = ScopePicker(
        label=gettext_lazy("excluded categories"),
        help_text=gettext_lazy(
            "A store-wide or category coupon leaves these out: no threshold, no discount on "
            "their products."
        ),
    )
    excluded_product_ids = ScopePicker(
        label=gettext_lazy("excluded products"),
        help_text=gettext_lazy("Flash-sale items, gift cards: left out as above."),
    )

    class Meta:
        model = CouponTemplate
        fields = list(templates.TEMPLATE_TERMS)
        labels = {
            "name": gettext_lazy("name"),
            "type": gettext_lazy("type"),
            # How many coupons, never money: "total" alone read as 总额 (an amount).
            "total": gettext_lazy("issue total"),
            "per_user_limit": gettext_lazy("per user limit"),
            "valid_from": gettext_lazy("valid from"),
            "valid_until": gettext_lazy("valid until"),
            "valid_days": gettext_lazy("days of use"),
            "scope": gettext_lazy("scope"),
            "code": gettext_lazy("code"),
            "visibility": gettext_lazy("visibility"),
            "audience": gettext_lazy("audience"),
        }
        widgets = {"valid_from": SecondsSplitDateTime, "valid_until": SecondsSplitDateTime}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "value" in self.fields:
            self.initial["value"] = value_for_form(self.instance.type, self.instance.value)
        if "auto_issue" in self.fields:
            self.fields["auto_issue"].required = False
        if "audience" in self.fields:  # a post without it keeps the template's audience
            self.fields["audience"].required = False
            if self.is_bound and self.add_prefix("audience") not in self.data:
                self.fields["audience"].disabled = True  # unchanged, not logged as changed
        zone = timezone.get_current_timezone_name()
        for field in ("valid_from", "valid_until"):
            if field in self.fields:
                self.fields[field].help_text = _("Time zone: %(zone)s.") % {"zone": zone}
        if "valid_from" in self.fields:
            window = _(
                "Claim window. Editing it later changes who may still claim, never the use "
                "window of coupons already issued."
            )
            self.fields["valid_from"].help_text = f"{window} {self.fields['valid_from'].help_text}"
        self.scope_pickers = False
        catalog = scope_catalog()
        pickers_wanted = all(name in self.fields for name in SCOPE_PICKERS.values())
        if catalog is not None and pickers_wanted:
            self.scope_pickers = True
            self.fields.pop("scope_ids", None)
            self.fields["scope_categories"].choices = list(catalog.categories().items())
            self.fields["scope_products"].choices = list(catalog.products().items())
            if self.instance.pk and self.instance.scope in SCOPE_PICKERS:
                self.initial[SCOPE_PICKERS[self.instance.scope]] = self.instance.scope_ids
        else:
            for name in SCOPE_PICKERS.values():
                self.fields.pop(name, None)
        for name, kind in EXCLUSION_PICKERS.items():
            field = self.fields.get(name)
            if isinstance(field, ScopePicker) and catalog is not None:
                field.choices = list(
                    (catalog.categories() if kind == "categories" else catalog.products()).items()
                )
            elif field is not None:  # no catalog: ids typed by hand
                self.fields[name] = IdListField(
                    label=field.label, help_text=field.help_text, required=False
                )

    def clean(self):
        cleaned = super().clean()
        current = self.instance if self.instance.pk else None
        if "min_amount" in self.fields and cleaned.get("min_amount") is None:
            cleaned["min_amount"] = 0
        if "audience" in self.fields and not cleaned.get("audience"):
            cleaned["audience"] = getattr(current, "audience", CouponTemplate.Audience.ALL)
        # A post without them (an older page) keeps how the template is issued.
        if "auto_issue" in self.fields and not cleaned.get("auto_issue"):
            cleaned["auto_issue"] = getattr(current, "auto_issue", CouponTemplate.AutoIssue.NONE)
        if "auto_issue_min_pay" in self.fields and cleaned.get("auto_issue_min_pay") is None:
            cleaned["auto_issue_min_pay"] = getattr(current, "auto_issue_min_pay", 0)
        kind = cleaned.get("type") if "type" in self.fields else getattr(current, "type", None)
        if "value" in self.fields and "value" in cleaned:
            try:
                cleaned["value"] = value_from_form(kind, cleaned["value"])
            except forms.ValidationError as error:
                self.add_error("value", error)
        self._refuse_deep_discount_unless_confirmed(kind, cleaned)
        self._refuse_edits_of_fields_frozen_meanwhile(current)
        editable = set(self.fields)
        if self.scope_pickers:
            picker = SCOPE_PICKERS.get(cleaned.get("scope"))
            cleaned["scope_ids"] = list(cleaned.get(picker) or []) if picker else []
            editable.add("scope_ids")
        # A field shown read-only (frozen once claimed) keeps the template's own value.
        terms = {
            field: cleaned.get(field) if field in editable else getattr(current, field)
            for field in templates.TEMPLATE_TERMS
        }
        try:
            terms = template_terms_rules.template_terms_validate(terms, current=current)
        except TemplateInvalid as error:
            for field, messages in error.fields.items():
                if field == "scope_ids" and self.scope_pickers:
                    field = SCOPE_PICKERS.get(cleaned.get("scope"), "scope")
                if field not in self.errors:  # already reported by the form field itself
                    self.add_error(field if field in self.fields else None, messages)
            return cleaned
        cleaned.update(terms)
        return cleaned

    def _refuse_edits_of_fields_frozen_meanwhile(self, current: CouponTemplate | None) -> None:
        """The page was shown before the first claim, with these fields editable; a claim then
        froze them, so they are no longer form fields and the posted value would be dropped
        silently. Say so instead, when the posted value differs from the template's."""
        if current is None:
            return
        for field in template_terms_rules.FROZEN_ONCE_CLAIMED:
            if field in self.fields or (field == "scope_ids" and self.scope_pickers):
                continue  # editable here: the pickers stand for scope_ids when shown
            if field == "scope_ids" and field not in self.data:
                posted = self._posted_scope_picks(current)
            elif field in self.data:
                posted = posted_term(field, self.data[field], kind=current.type)
            else:
                continue
            if posted is not None and posted != getattr(current, field):
                label = self._label_of(field, current)
                self.add_error(
                    None,
                    _(
                        "A coupon was claimed while you were editing, so “%(field)s” can no "
                        "longer change. Nothing was saved."
                    )
                    % {"field": label},
                )

    def _label_of(self, field: str, current: CouponTemplate) -> str:
        """The field as the page names it, in the admin's language (the model's scope_ids has
        no translated name): a frozen term's form field is gone from this form, not from the
        class's fields; with a catalog, scope ids are the picker of the template's scope."""
        if field == "scope_ids" and scope_catalog() is not None:
            field = SCOPE_PICKERS.get(current.scope, "scope")
        return str(CouponTemplateForm.base_fields[field].label)

    def _refuse_deep_discount_unless_confirmed(self, kind: str | None, cleaned: dict) -> None:
        percent = cleaned.get("value")
        if kind != CouponTemplate.Type.PERCENT or "confirm_deep_discount" not in self.fields:
            return
        if not isinstance(percent, int) or percent < DEEP_DISCOUNT_PERCENT:
            return
        if cleaned.get("confirm_deep_discount"):
            return
        off = 100 - percent  # 90 typed for 9折 (a tenth off): "for 9折 type 10", not "90折"
        amounts = {"percent": percent, "zhe": zhe(percent), "meant": zhe(off), "off": off}
        message = _(
            "%(percent)s%% off is %(zhe)s折, the price cut by more than half. For "
            "%(meant)s折 type %(off)s; to give %(percent)s%% off, tick “more than half "
            "off, on purpose”."
        )
        self.add_error("value", message % amounts)

    def _posted_scope_picks(self, current: CouponTemplate) -> list[int] | None:
        """The ids a page with the scope pickers posted for the template's scope kind; None when
        it posted none for it (a multiple select sends nothing when nothing is picked)."""
        picker = SCOPE_PICKERS.get(current.scope)
        if picker is None or picker not in self.data:
            return None
        picked = self.data.getlist(picker) if hasattr(self.data, "getlist") else []
        if not all(is_id_text(text) for text in picked):
            return []
        return sorted({int(text) for text in picked})


def value_for_form(kind: str, value: int) -> str:
    if kind == CouponTemplate.Type.PERCENT:
        return str(value)
    return format_cents(value).replace(",", "")


def value_from_form(kind: str | None, text: str) -> int:
    """The value field's text as stored: the percent for a percent coupon, else cents."""
    text = text.strip()
    if kind == CouponTemplate.Type.PERCENT:
        if not (text.isascii() and text.isdigit() and len(text) <= 3):
            raise forms.ValidationError(_("A whole percent, 1 to 99."))
        if not 1 <= int(text) <= MAX_PERCENT:  # said here: the deep-discount check would misread it
            raise forms.ValidationError(template_terms_rules.percent_range_message())
        return int(text)
    try:
        return parse_money(text)
    except MoneyInvalid as error:
        raise forms.ValidationError(str(error)) from error


def posted_term(field: str, text: str, *, kind: str):
    """A frozen term as posted by a page that still showed it editable, parsed as the form
    would; None when it cannot be parsed (which then differs from any stored value)."""
    try:
        match field:
            case "value":
                return value_from_form(kind, text)
            case "min_amount":
                return parse_money(text) if text.strip() else 0
            case "max_discount":
                return parse_money(text) if text.strip() else None
            case "valid_days":
                return int(text) if text.strip() else None
            case "scope_ids":
                return IdListField(required=False).clean(text)
    except (MoneyInvalid, ValueError, forms.ValidationError):
        return None
    return text
