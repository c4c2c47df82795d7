"""The operator's Django admin for coupon templates (SPEC section 13): the list with its
funnel, the page with its report, chart and CSV export. Every write goes through
coupons.services.templates, so the rules are the API's; a template with claims cannot be deleted.
The services record each action (backoffice/staff_actions.py), so this admin writes no LogEntry of
its own for templates; the history page words the records with their amounts."""

from typing import TYPE_CHECKING

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice import reports
from backoffice.audit_admin import StaffHistoryAdmin
from backoffice.coupon_admin import grants, promotions, spreadsheets
from backoffice.coupon_admin.code_import import CodeImportAdmin
from backoffice.coupon_admin.display import (
    STATE_LABELS,
    attach_scope_texts,
    issued_by_text,
    local_datetime,
    rate_text,
    scope_text,
    terms_text,
    zhe,
)
from backoffice.coupon_admin.filters import StateFilter, TypeFilter
from backoffice.coupon_admin.forms import SCOPE_PICKERS, CouponTemplateForm
from backoffice.coupon_admin.template_report import template_report
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core import clock
from core.admin_fields import RefusalAsFormErrorAdmin, RefusedOnSave
from core.money import format_money
from coupons import selectors, template_terms_rules
from coupons.catalog import scope_catalog
from coupons.errors import TemplateInvalid
from coupons.models import CouponTemplate
from coupons.services import templates

if TYPE_CHECKING:
    from backoffice.reports import TemplateWithFunnel


class TemplateDeleteRefused(Exception):
    """The delete service refused under the row lock (a claim landed meanwhile)."""


@admin.register(CouponTemplate)
class CouponTemplateAdmin(StaffHistoryAdmin, RefusalAsFormErrorAdmin, CodeImportAdmin):
    form = CouponTemplateForm
    change_form_template = "admin/coupons/coupontemplate/change_form.html"
    list_display = [
        "template_name",
        "terms",
        "scope_names",
        "window",
        "issued_by",
        "campaign_name",
        "claimed_of_total",
        "used",
        "expired",
        "redemption_rate",
        "state",
    ]
    list_filter = [TypeFilter, StateFilter, "auto_issue", "audience", "campaign"]
    list_select_related = ["campaign"]
    search_fields = ["name"]
    readonly_fields = [
        "campaign",
        "claimed_count",
        "paused_at",
        "has_single_use_codes",
        "created_at",
        "updated_at",
    ]
    actions = [
        grants.grant_to_users,
        promotions.pause_templates,
        promotions.resume_templates,
        promotions.export_single_use_codes,
        spreadsheets.export_single_use_codes_xlsx,
        spreadsheets.export_templates_xlsx,
        spreadsheets.export_templates_csv,
    ]

    def get_actions(self, request):
        # The bulk delete action would bypass the "no delete once claimed" rule.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_queryset(self, request):
        return reports.templates_with_funnel(now=clock.now())

    # Once claimed, the frozen terms are shown read-only, money as money (a read-only model
    # field would show raw cents); the form's own fields for them go. The scope is shown once:
    # scope_names says its kind and what it names ("Products of some categories: Tea").
    FROZEN_SHOWN_AS = {
        "value": "value_shown",
        "min_amount": "min_amount_money",
        "max_discount": "max_discount_money",
        "scope": None,
        "scope_ids": "scope_names",
        # scope_names says what the scope leaves out and whether it takes one unit (they were
        # shown as raw ids and True).
        "excluded_product_ids": None,
        "excluded_category_ids": None,
        "one_unit_only": None,
    }
    FORM_DECLARED = (
        "value",
        "min_amount",
        "max_discount",
        "scope_ids",
        "scope_categories",
        "scope_products",
        "excluded_category_ids",
        "excluded_product_ids",
        "confirm_deep_discount",
    )

    @staticmethod
    def is_frozen(obj: CouponTemplate | None) -> bool:
        return obj is not None and obj.claimed_count > 0

    @staticmethod
    def editable_terms() -> list[str]:
        """The terms as form fields: the value with its deep-discount confirmation and, with a
        catalog, scope ids picked by name."""
        shown_as = {"scope_ids": list(SCOPE_PICKERS.values())}
        if scope_catalog() is None:
            shown_as = {}
        shown_as["value"] = ["value", "confirm_deep_discount"]
        return [name for field in templates.TEMPLATE_TERMS for name in shown_as.get(field, [field])]

    def get_fields(self, request, obj=None):
        if obj is None:
            return self.editable_terms()
        if not self.is_frozen(obj):
            return [*self.editable_terms(), *self.readonly_fields]
        return [*self.frozen_shown(templates.TEMPLATE_TERMS), *self.readonly_fields]

    def get_exclude(self, request, obj=None):
        # Without this the model's own (cents) fields would stand in for the money fields.
        return list(template_terms_rules.FROZEN_ONCE_CLAIMED) if self.is_frozen(obj) else None

    def get_readonly_fields(self, request, obj=None):
        if not self.is_frozen(obj):
            return self.readonly_fields
        return [*self.frozen_shown(template_terms_rules.FROZEN_ONCE_CLAIMED), *self.readonly_fields]

    @classmethod
    def frozen_shown(cls, fields) -> list[str]:
        """What a frozen template's page shows for `fields`, in their order."""
        shown = (cls.FROZEN_SHOWN_AS.get(field, field) for field in fields)
        return [name for name in shown if name is not None]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if self.is_frozen(obj):
            # Declared form fields stay unless removed, even when excluded.
            form = type(form.__name__, (form,), dict.fromkeys(self.FORM_DECLARED))
        return form

    @admin.display(description=gettext_lazy("value"))
    def value_shown(self, template: CouponTemplate) -> str:
        if template.type == CouponTemplate.Type.PERCENT:
            return _("%(percent)s%% off, %(zhe)s折") % {
                "percent": template.value,
                "zhe": zhe(template.value),
            }
        return format_money(template.value)

    @admin.display(description=gettext_lazy("minimum order"))
    def min_amount_money(self, template: CouponTemplate) -> str:
        return format_money(template.min_amount)

    @admin.display(description=gettext_lazy("maximum discount"))
    def max_discount_money(self, template: CouponTemplate) -> str:
        return format_money(template.max_discount) or "–"

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        attach_scope_texts(changelist.result_list)  # the page's rows, evaluated once
        return changelist

    @admin.display(description=gettext_lazy("scope"))
    def scope_names(self, template: CouponTemplate) -> str:
        return getattr(template, "scope_shown", None) or scope_text(template)

    @admin.display(description=gettext_lazy("name"), ordering="name")
    def template_name(self, template: CouponTemplate) -> str:
        return template.name

    @admin.display(description=gettext_lazy("terms"))
    def terms(self, template: CouponTemplate) -> str:
        return terms_text(template)

    @admin.display(description=gettext_lazy("claim window"), ordering="valid_from")
    def window(self, template: CouponTemplate) -> str:
        return format_html(
            "{}<br>– {}", local_datetime(template.valid_from), local_datetime(template.valid_until)
        )

    @admin.display(description=gettext_lazy("issued by"))
    def issued_by(self, template: CouponTemplate) -> str:
        return issued_by_text(template)

    @admin.display(description=gettext_lazy("campaign"), ordering="campaign__name")
    def campaign_name(self, template: CouponTemplate) -> str:
        return template.campaign.name if template.campaign else "–"

    @admin.display(description=gettext_lazy("claimed / issue total"), ordering="claimed_count")
    def claimed_of_total(self, template: CouponTemplate) -> str:
        return f"{template.claimed_count} / {template.total}"

    @admin.display(description=gettext_lazy("used"), ordering="used_count")
    def used(self, template: "TemplateWithFunnel") -> int:
        return template.used_count

    @admin.display(description=gettext_lazy("expired"), ordering="expired_count")
    def expired(self, template: "TemplateWithFunnel") -> int:
        return template.expired_count

    @admin.display(description=gettext_lazy("redemption rate"))
    def redemption_rate(self, template: CouponTemplate) -> str:
        return rate_text(reports.template_funnel(template, now=clock.now()).redemption_rate)

    @admin.display(description=gettext_lazy("state"))
    def state(self, template: CouponTemplate) -> str:
        return str(STATE_LABELS[selectors.template_state(template, now=clock.now())])

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.claimed_count > 0:
            return False
        return super().has_delete_permission(request, obj)

    # --- The template page: funnel, chart, recent claims, orders, export ------------------------

    def has_pause_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.TEMPLATE_PAUSE)

    def has_export_codes_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.CODES_EXPORT)

    def has_export_templates_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.TEMPLATES_EXPORT)

    # The services record publish, edit and delete with their amounts: Django's own entries
    # would record them a second time.
    def log_addition(self, request, obj, message):
        return None

    def log_change(self, request, obj, message):
        return None

    def log_deletions(self, request, queryset):
        return None

    def change_view(self, request, object_id, form_url="", extra_context=None):
        template = self.get_object(request, object_id)
        if template is not None and request.method == "GET":
            report = template_report(template)
            # A button is shown only to whoever may use it (its URL checks again).
            if not self.has_export_permission(request):
                report["export_url"] = None
            if not self.has_grant_permission(request):
                report["grant_url"] = None
            report["code_counts"] = selectors.single_use_code_counts(template_id=template.pk)
            if self.has_records_permission(request):
                report["records_url"] = reverse(
                    "admin:coupons_coupontemplate_records", args=[template.pk]
                )
            if self.has_manage_codes_permission(request):
                report["codes_url"] = reverse(
                    "admin:coupons_coupontemplate_codes", args=[template.pk]
                )
            extra_context = {**(extra_context or {}), **report}
        return super().change_view(request, object_id, form_url, extra_context)

    # --- Saving and deleting through the services ---------------------------------------------

    def save_model(self, request, obj, form, change) -> None:
        terms = {field: form.cleaned_data[field] for field in templates.TEMPLATE_TERMS}
        try:
            if change:
                saved = templates.coupon_template_edit(
                    template_id=obj.pk,
                    changes=terms,
                    audit=staff_audit(request.user, StaffAction.TEMPLATE_EDIT),
                )
            else:
                saved = templates.coupon_template_publish(
                    **terms, audit=staff_audit(request.user, StaffAction.TEMPLATE_PUBLISH)
                )
        except TemplateInvalid as error:
            # The services re-check under the row lock; a claim that landed after the form's
            # check is refused there and comes back as form errors (RefusalAsFormErrorAdmin).
            errors: dict[str | None, list[str]] = (
                {field: messages for field, messages in error.fields.items()}
                if error.fields
                else {None: [str(error.detail)]}
            )
            raise RefusedOnSave(errors) from error
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_view(self, request, object_id, extra_context=None):
        template = self.get_object(request, object_id)
        if template is not None and template.claimed_count > 0:
            return self.delete_refused(request, template)
        try:
            return super().delete_view(request, object_id, extra_context)
        except TemplateDeleteRefused:
            template.refresh_from_db()
            return self.delete_refused(request, template)

    def delete_model(self, request, obj) -> None:
        try:
            templates.coupon_template_delete(
                template_id=obj.pk, audit=staff_audit(request.user, StaffAction.TEMPLATE_DELETE)
            )
        except TemplateInvalid as error:
            raise TemplateDeleteRefused(error.detail) from error

    def delete_refused(self, request, template: CouponTemplate) -> TemplateResponse:
        """A refused delete explained in words, as an admin page (409)."""
        context = {
            **self.admin_site.each_context(request),
            "title": _("Cannot delete “%(name)s”") % {"name": template.name},
            "opts": self.opts,
            "original": template,
            "reason": ngettext(
                "%(count)d coupon has been claimed from this template.",
                "%(count)d coupons have been claimed from this template.",
                template.claimed_count,
            )
            % {"count": template.claimed_count},
        }
        return TemplateResponse(
            request, "admin/coupons/coupontemplate/delete_refused.html", context, status=409
        )
