"""The Django admin for coupon templates: publishes and edits through coupons.services, so the
rules are the API's; a template with claims cannot be deleted."""

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied

from config import clock
from coupons import admin_grants, selectors, services
from coupons.catalog import scope_catalog
from coupons.errors import TemplateInvalid
from coupons.models import CouponTemplate
from coupons.rules import ClaimState, template_state_where


class IdListField(forms.CharField):
    """scope_ids typed as "3, 7, 12"; the rules on the list are the service's."""

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        parts = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
        if not all(part.isascii() and part.isdigit() and len(part) <= 18 for part in parts):
            raise forms.ValidationError("Ids separated by commas, e.g. 3, 7, 12.")
        return [int(part) for part in parts]


class CouponTemplateForm(forms.ModelForm):
    scope_ids = IdListField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Category or product ids, separated by commas (empty for the whole store).",
    )

    class Meta:
        model = CouponTemplate
        fields = list(services.TEMPLATE_TERMS)
        help_texts = {
            "valid_from": "Claim window. Editing it later changes who may still claim, never "
            "the use window of coupons already issued.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        catalog = scope_catalog()
        if catalog is not None:  # which categories exist, from the injected catalog
            listed = ", ".join(f"{pk} {name}" for pk, name in catalog.categories().items())
            self.fields["scope_ids"].help_text += f" Categories: {listed or 'none yet'}."

    def clean(self):
        cleaned = super().clean()
        current = self.instance if self.instance.pk else None
        try:
            terms = services.template_terms_validate(
                {field: cleaned.get(field) for field in services.TEMPLATE_TERMS}, current=current
            )
        except TemplateInvalid as error:
            for field, messages in error.fields.items():
                if field not in self.errors:  # already reported by the form field itself
                    self.add_error(field if field in self.fields else None, messages)
            return cleaned
        cleaned.update(terms)
        return cleaned


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    STATES = (ClaimState.NOT_STARTED, ClaimState.ACTIVE, ClaimState.SOLD_OUT, ClaimState.ENDED)

    def lookups(self, request, model_admin):
        return [(state.value, state.value.replace("_", " ")) for state in self.STATES]

    def queryset(self, request, queryset):
        if self.value() not in {state.value for state in self.STATES}:
            return queryset
        state = ClaimState(self.value())
        return queryset.filter(template_state_where(state, now=clock.now()))


@admin.register(CouponTemplate)
class CouponTemplateAdmin(admin.ModelAdmin):
    form = CouponTemplateForm
    list_display = [
        "name",
        "type",
        "value",
        "min_amount",
        "valid_from",
        "valid_until",
        "claimed_of_total",
        "state",
    ]
    list_filter = ["type", StateFilter]
    search_fields = ["name"]
    readonly_fields = ["claimed_count", "created_at", "updated_at"]
    actions = [admin_grants.grant_to_users]

    def get_actions(self, request):
        # The bulk delete action would bypass the "no delete once claimed" rule.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="claimed / total")
    def claimed_of_total(self, template: CouponTemplate) -> str:
        return f"{template.claimed_count} / {template.total}"

    @admin.display(description="state")
    def state(self, template: CouponTemplate) -> str:
        return selectors.template_state(template, now=clock.now()).replace("_", " ")

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.claimed_count > 0:
            return False
        return super().has_delete_permission(request, obj)

    # The form checked the rules against the template as it was; a claim may land before the
    # save. The services re-check under the row lock, and a refusal then is a 403 page with
    # nothing written, not a 500.

    def save_model(self, request, obj, form, change) -> None:
        terms = {field: form.cleaned_data[field] for field in services.TEMPLATE_TERMS}
        try:
            if change:
                saved = services.coupon_template_edit(template_id=obj.pk, changes=terms)
            else:
                saved = services.coupon_template_publish(**terms)
        except TemplateInvalid as error:
            raise PermissionDenied(f"{error.detail} {error.fields or ''}") from error
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj) -> None:
        try:
            services.coupon_template_delete(template_id=obj.pk)
        except TemplateInvalid as error:
            raise PermissionDenied(error.detail) from error
