"""Pieces every ModelAdmin of the project shares: money entry and refusals as form errors."""

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.money import MoneyInvalid, currency_symbol, format_cents, parse_money


class MoneyInput(forms.TextInput):
    """A text box showing cents as "50.00", with the currency symbol in front of it."""

    def render(self, name, value, attrs=None, renderer=None):
        box = super().render(name, value, attrs, renderer)
        return format_html('<span class="money-symbol">{}</span>&nbsp;{}', currency_symbol(), box)


class MoneyField(forms.Field):
    """Entered as currency ("50.00", "¥50", "1,234.5"), cleaned to integer cents (5000)."""

    widget = MoneyInput

    def __init__(self, *, min_cents: int = 0, max_cents: int, **kwargs: Any) -> None:
        self.min_cents = min_cents
        self.max_cents = max_cents
        kwargs.setdefault("help_text", gettext_lazy("An amount such as 50.00."))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return format_cents(value).replace(",", "")
        return value

    def to_python(self, value: Any) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if value in self.empty_values:
            return None
        try:
            return parse_money(str(value))
        except MoneyInvalid as error:
            raise ValidationError(str(error), code="invalid") from error

    def validate(self, value: int | None) -> None:
        super().validate(value)
        if value is not None and not self.min_cents <= value <= self.max_cents:
            raise ValidationError(
                _("Must be between %(low)s and %(high)s.")
                % {"low": format_cents(self.min_cents), "high": format_cents(self.max_cents)},
                code="out_of_range",
            )


class RefusedOnSave(Exception):
    """A service refused the save under its lock, after the form had passed (for example a
    claim landed between the form's check and the save). `errors` maps a form field name,
    or None for the whole form, to messages."""

    def __init__(self, errors: dict[str | None, list[str]]) -> None:
        self.errors = errors
        super().__init__(str(errors))


class RefusalFormMixin:
    """Adds the refusal a previous attempt at this same request met to the form's errors,
    unless the form, checked again against the changed data, already explains it."""

    refusal: dict[str | None, list[str]] = {}

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        for field, messages in self.refusal.items():
            target = field if field in self.fields else None
            for message in messages:
                if target is None and field:
                    message = f"{field}: {message}"
                self.add_error(target, message)
        return cleaned


class RefusalAsFormErrorAdmin(admin.ModelAdmin):
    """A refusal raised by save_model (RefusedOnSave) answers the same page again with the
    refusal as form errors and nothing written, instead of a bare error page.

    The admin runs the whole POST in one transaction, so the refusal rolls it back; the page is
    then rebuilt by running the POST once more with the refusal attached to the form, which
    makes the form invalid, so nothing is saved the second time either."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        refusal = getattr(request, "refused_on_save", None)
        if refusal:
            form = type(form.__name__, (RefusalFormMixin, form), {"refusal": refusal})
        return form

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except RefusedOnSave as refusal:
            request.refused_on_save = refusal.errors
            return super().changeform_view(request, object_id, form_url, extra_context)


class ReadOnlyAdmin(admin.ModelAdmin):
    """A page to look at: nobody adds, changes or deletes through it (what it lists is written
    by the services)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
