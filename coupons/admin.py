"""The operator's Django admin for coupons (SPEC section 13): templates with their funnel, chart
and CSV export, user coupons read-only (also inline on a user's page). Every write goes through
coupons.services, so the rules are the API's; a template with claims cannot be deleted."""

import csv
from collections.abc import Iterator

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from core import clock
from core.admin_fields import MoneyField, RefusalAsFormErrorAdmin, RefusedOnSave
from core.money import MoneyInvalid, format_cents, format_money, parse_money
from coupons import admin_grants, selectors, services
from coupons.admin_chart import activity_chart_svg
from coupons.catalog import scope_catalog
from coupons.errors import TemplateInvalid
from coupons.models import GRANT_REASON_MAX_LENGTH, MAX_AMOUNT, CouponTemplate, UserCoupon
from coupons.rules import ClaimState, template_state_where
from coupons.services import MAX_GRANT_USERS

CSV_BATCH_SIZE = 1000
RECENT_ROWS = 10


def local_datetime(moment) -> str:
    """A stored UTC instant as the operator reads it: TIME_ZONE, the active language's format."""
    if moment is None:
        return ""
    return date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


def orders_lookup():
    """The orders app's answer to "which orders used these coupons" (see ports.CouponOrder)."""
    return import_string(settings.COUPON_ADMIN_ORDERS_LOOKUP)


# --- Templates --------------------------------------------------------------------------------


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
            raise forms.ValidationError(_("Ids separated by commas, e.g. 3, 7, 12."))
        return [int(part) for part in parts]


class CouponTemplateForm(forms.ModelForm):
    # Money off (typed as currency) for direct and threshold coupons, the percent for percent
    # ones: parsed in clean(), once the type is known.
    value = forms.CharField(
        label=gettext_lazy("value"),
        max_length=40,
        help_text=gettext_lazy(
            "Money off, e.g. 50.00; for a percent coupon the percent, a whole number 1 to 99."
        ),
    )
    min_amount = MoneyField(
        label=gettext_lazy("minimum order"),
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("The order total needed (threshold and percent), e.g. 200.00."),
    )
    max_discount = MoneyField(
        label=gettext_lazy("maximum discount"),
        min_cents=1,
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("Percent coupons only: the cap, e.g. 20.00 (empty: no cap)."),
    )
    scope_ids = IdListField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=gettext_lazy(
            "Category or product ids, separated by commas (empty for the whole store)."
        ),
    )

    class Meta:
        model = CouponTemplate
        fields = list(services.TEMPLATE_TERMS)
        labels = {
            "name": gettext_lazy("name"),
            "type": gettext_lazy("type"),
            "total": gettext_lazy("total"),
            "per_user_limit": gettext_lazy("per user limit"),
            "valid_from": gettext_lazy("valid from"),
            "valid_until": gettext_lazy("valid until"),
            "valid_days": gettext_lazy("days of use"),
            "scope": gettext_lazy("scope"),
            "code": gettext_lazy("code"),
            "visibility": gettext_lazy("visibility"),
        }
        help_texts = {
            "valid_from": gettext_lazy(
                "Claim window. Editing it later changes who may still claim, never the use "
                "window of coupons already issued."
            ),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "value" in self.fields:
            self.initial["value"] = value_for_form(self.instance.type, self.instance.value)
        catalog = scope_catalog()
        if catalog is not None and "scope_ids" in self.fields:  # from the injected catalog
            listed = ", ".join(f"{pk} {name}" for pk, name in catalog.categories().items())
            self.fields["scope_ids"].help_text = format_html(
                "{} {}",
                self.fields["scope_ids"].help_text,
                _("Categories: %(listed)s.") % {"listed": listed or _("none yet")},
            )

    def clean(self):
        cleaned = super().clean()
        current = self.instance if self.instance.pk else None
        if "min_amount" in self.fields and cleaned.get("min_amount") is None:
            cleaned["min_amount"] = 0
        kind = cleaned.get("type") if "type" in self.fields else getattr(current, "type", None)
        if "value" in self.fields and "value" in cleaned:
            try:
                cleaned["value"] = value_from_form(kind, cleaned["value"])
            except forms.ValidationError as error:
                self.add_error("value", error)
        self._refuse_edits_of_fields_frozen_meanwhile(current)
        # A field shown read-only (frozen once claimed) keeps the template's own value.
        terms = {
            field: cleaned.get(field) if field in self.fields else getattr(current, field)
            for field in services.TEMPLATE_TERMS
        }
        try:
            terms = services.template_terms_validate(terms, current=current)
        except TemplateInvalid as error:
            for field, messages in error.fields.items():
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
        for field in services.FROZEN_ONCE_CLAIMED:
            if field in self.fields or field not in self.data:
                continue
            if posted_term(field, self.data[field], kind=current.type) != getattr(current, field):
                self.add_error(
                    None,
                    _(
                        "A coupon was claimed while you were editing, so “%(field)s” can no "
                        "longer change. Nothing was saved."
                    )
                    % {"field": CouponTemplate._meta.get_field(field).verbose_name},
                )


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


class StateFilter(admin.SimpleListFilter):
    title = gettext_lazy("state")
    parameter_name = "state"

    STATES = (ClaimState.NOT_STARTED, ClaimState.ACTIVE, ClaimState.SOLD_OUT, ClaimState.ENDED)

    def lookups(self, request, model_admin):
        return [(state.value, STATE_LABELS[state.value]) for state in self.STATES]

    def queryset(self, request, queryset):
        if self.value() not in {state.value for state in self.STATES}:
            return queryset
        state = ClaimState(self.value())
        return queryset.filter(template_state_where(state, now=clock.now()))


TYPE_LABELS = {
    CouponTemplate.Type.DIRECT: gettext_lazy("direct (flat amount off)"),
    CouponTemplate.Type.THRESHOLD: gettext_lazy("threshold (spend X, get Y off)"),
    CouponTemplate.Type.PERCENT: gettext_lazy("percent off"),
}


class TypeFilter(admin.SimpleListFilter):
    title = gettext_lazy("type")
    parameter_name = "type"

    def lookups(self, request, model_admin):
        return [(kind.value, label) for kind, label in TYPE_LABELS.items()]

    def queryset(self, request, queryset):
        if self.value() in CouponTemplate.Type.values:
            return queryset.filter(type=self.value())
        return queryset


STATE_LABELS = {
    "not_started": gettext_lazy("not started"),
    "active": gettext_lazy("active"),
    "sold_out": gettext_lazy("sold out"),
    "ended": gettext_lazy("ended"),
}


def terms_text(template: CouponTemplate) -> str:
    """The discount in words: "¥5.00 off", "¥50.00 off orders of ¥200.00 or more",
    "15% off, at most ¥20.00"."""
    if template.type == CouponTemplate.Type.PERCENT:
        text = _("%(percent)s%% off") % {"percent": template.value}
        if template.max_discount:
            text = _("%(terms)s, at most %(cap)s") % {
                "terms": text,
                "cap": format_money(template.max_discount),
            }
    else:
        text = _("%(value)s off") % {"value": format_money(template.value)}
    if template.min_amount:
        text = _("%(terms)s on orders of %(minimum)s or more") % {
            "terms": text,
            "minimum": format_money(template.min_amount),
        }
    return text


def rate_text(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1%}"


class TemplateDeleteRefused(Exception):
    """The delete service refused under the row lock (a claim landed meanwhile)."""


@admin.register(CouponTemplate)
class CouponTemplateAdmin(RefusalAsFormErrorAdmin):
    form = CouponTemplateForm
    change_form_template = "admin/coupons/coupontemplate/change_form.html"
    list_display = [
        "template_name",
        "terms",
        "window",
        "claimed_of_total",
        "used",
        "expired",
        "redemption_rate",
        "state",
    ]
    list_filter = [TypeFilter, StateFilter]
    search_fields = ["name"]
    readonly_fields = ["claimed_count", "created_at", "updated_at"]
    actions = [admin_grants.grant_to_users]

    def get_actions(self, request):
        # The bulk delete action would bypass the "no delete once claimed" rule.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_queryset(self, request):
        return selectors.templates_with_funnel(now=clock.now())

    # Once claimed, the frozen terms are shown read-only, money as money (a read-only model
    # field would show raw cents); the form's own fields for them go.
    FROZEN_SHOWN_AS = {
        "value": "value_shown",
        "min_amount": "min_amount_money",
        "max_discount": "max_discount_money",
    }
    FORM_DECLARED = ("value", "min_amount", "max_discount", "scope_ids")

    @staticmethod
    def is_frozen(obj: CouponTemplate | None) -> bool:
        return obj is not None and obj.claimed_count > 0

    def get_fields(self, request, obj=None):
        if obj is None:
            return list(services.TEMPLATE_TERMS)
        if not self.is_frozen(obj):
            return [*services.TEMPLATE_TERMS, *self.readonly_fields]
        terms = [self.FROZEN_SHOWN_AS.get(field, field) for field in services.TEMPLATE_TERMS]
        return [*terms, *self.readonly_fields]

    def get_exclude(self, request, obj=None):
        # Without this the model's own (cents) fields would stand in for the money fields.
        return list(services.FROZEN_ONCE_CLAIMED) if self.is_frozen(obj) else None

    def get_readonly_fields(self, request, obj=None):
        if not self.is_frozen(obj):
            return self.readonly_fields
        shown = [self.FROZEN_SHOWN_AS.get(field, field) for field in services.FROZEN_ONCE_CLAIMED]
        return [*shown, *self.readonly_fields]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if self.is_frozen(obj):
            # Declared form fields stay unless removed, even when excluded.
            form = type(form.__name__, (form,), dict.fromkeys(self.FORM_DECLARED))
        return form

    @admin.display(description=gettext_lazy("value"))
    def value_shown(self, template: CouponTemplate) -> str:
        if template.type == CouponTemplate.Type.PERCENT:
            return f"{template.value}%"
        return format_money(template.value)

    @admin.display(description=gettext_lazy("minimum order"))
    def min_amount_money(self, template: CouponTemplate) -> str:
        return format_money(template.min_amount)

    @admin.display(description=gettext_lazy("maximum discount"))
    def max_discount_money(self, template: CouponTemplate) -> str:
        return format_money(template.max_discount) or "–"

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

    @admin.display(description=gettext_lazy("claimed / total"), ordering="claimed_count")
    def claimed_of_total(self, template: CouponTemplate) -> str:
        return f"{template.claimed_count} / {template.total}"

    @admin.display(description=gettext_lazy("used"), ordering="used_count")
    def used(self, template: CouponTemplate) -> int:
        return template.used_count

    @admin.display(description=gettext_lazy("expired"), ordering="expired_count")
    def expired(self, template: CouponTemplate) -> int:
        return template.expired_count

    @admin.display(description=gettext_lazy("redemption rate"))
    def redemption_rate(self, template: CouponTemplate) -> str:
        return rate_text(selectors.template_funnel(template, now=clock.now()).redemption_rate)

    @admin.display(description=gettext_lazy("state"))
    def state(self, template: CouponTemplate) -> str:
        return STATE_LABELS[selectors.template_state(template, now=clock.now())]

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.claimed_count > 0:
            return False
        return super().has_delete_permission(request, obj)

    # --- The template page: funnel, chart, recent claims, orders, export ------------------------

    def get_urls(self):
        export = self.admin_site.admin_view(self.export_coupons_csv)
        grant = self.admin_site.admin_view(self.grant_view)
        return [
            path("<path:object_id>/coupons.csv", export, name="coupons_coupontemplate_export"),
            path("<path:object_id>/grant/", grant, name="coupons_coupontemplate_grant"),
            *super().get_urls(),
        ]

    def grant_view(self, request, object_id: str):
        """ "Grant to users" from the template's page: the list action's page and service
        (coupons/admin_grants.py) for this one template, then back to the template."""
        template = self.get_object(request, object_id)
        if template is None:
            raise Http404(_("No such coupon template."))
        if not self.has_change_permission(request, template):
            raise PermissionDenied
        answer = admin_grants.grant_to_users(
            self, request, CouponTemplate.objects.filter(pk=template.pk)
        )
        if answer is None:  # granted; the outcome is in the page's messages
            return redirect("admin:coupons_coupontemplate_change", template.pk)
        return answer

    def change_view(self, request, object_id, form_url="", extra_context=None):
        template = self.get_object(request, object_id)
        if template is not None and request.method == "GET":
            extra_context = {**(extra_context or {}), **self.template_report(template)}
        return super().change_view(request, object_id, form_url, extra_context)

    def template_report(self, template: CouponTemplate) -> dict:
        now = clock.now()
        funnel = selectors.template_funnel(template, now=now)
        days = selectors.template_activity_per_day(
            template, now=now, zone=timezone.get_current_timezone()
        )
        return {
            "funnel": funnel,
            "redemption_rate": rate_text(funnel.redemption_rate),
            "activity_chart": activity_chart_svg(days),
            "recent_claims": [
                {
                    "coupon": coupon,
                    "claimed_at": local_datetime(coupon.created_at),
                    "used_at": local_datetime(coupon.used_at),
                    "status": COUPON_STATUS_LABELS[selectors.derived_status(coupon, now=now)],
                }
                for coupon in selectors.recent_claims(template_id=template.pk, limit=RECENT_ROWS)
            ],
            "orders": [
                {
                    "order": order,
                    "total": format_money(order.total_amount),
                    "discount": format_money(order.discount_amount),
                    "created_at": local_datetime(order.created_at),
                }
                for order in orders_lookup()(template_id=template.pk, limit=RECENT_ROWS)
            ],
            "export_url": reverse("admin:coupons_coupontemplate_export", args=[template.pk]),
            "grant_url": reverse("admin:coupons_coupontemplate_grant", args=[template.pk]),
            "window_help": _(
                "Editing the claim window changes only who may still claim: every coupon "
                "already issued keeps its own use window."
            ),
        }

    def export_coupons_csv(self, request, object_id: str) -> StreamingHttpResponse:
        """Every coupon of the template as CSV, streamed in keyset batches: memory and the first
        byte do not wait for the whole template."""
        template = self.get_object(request, object_id)
        if template is None:
            raise Http404(_("No such coupon template."))
        if not self.has_view_permission(request, template):
            raise PermissionDenied
        response = StreamingHttpResponse(
            csv_lines(template, now=clock.now()), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="coupon-{template.pk}.csv"'
        return response

    # --- Saving and deleting through the services ---------------------------------------------

    def save_model(self, request, obj, form, change) -> None:
        terms = {field: form.cleaned_data[field] for field in services.TEMPLATE_TERMS}
        try:
            if change:
                saved = services.coupon_template_edit(template_id=obj.pk, changes=terms)
            else:
                saved = services.coupon_template_publish(**terms)
        except TemplateInvalid as error:
            # The services re-check under the row lock; a claim that landed after the form's
            # check is refused there and comes back as form errors (RefusalAsFormErrorAdmin).
            raise RefusedOnSave(error.fields or {None: [error.detail]}) from error
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
            services.coupon_template_delete(template_id=obj.pk)
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


CSV_HEADER = [
    "coupon_id",
    "user_id",
    "username",
    "source",
    "status",
    "claimed_at",
    "valid_until",
    "used_at",
    "order_id",
]


def csv_lines(template: CouponTemplate, *, now) -> Iterator[str]:
    """The template's coupons as CSV lines, oldest first, read in keyset batches of
    CSV_BATCH_SIZE with one order lookup per batch. Times are ISO 8601 in TIME_ZONE."""

    class Line:  # csv.writer wants a file; this one hands back the line just written
        def write(self, text: str) -> str:
            return text

    writer = csv.writer(Line())
    yield writer.writerow(CSV_HEADER)
    last_id = 0
    while True:
        batch = list(
            UserCoupon.objects.filter(template_id=template.pk, pk__gt=last_id)
            .select_related("user")
            .order_by("pk")[:CSV_BATCH_SIZE]
        )
        if not batch:
            return
        ids = [coupon.pk for coupon in batch]
        order_of = {
            order.coupon_id: order.order_id
            for order in orders_lookup()(coupon_ids=ids, limit=len(ids) * 2)
        }
        for coupon in batch:
            coupon.template = template  # the one template, not a query per row
            yield writer.writerow(
                [
                    coupon.pk,
                    coupon.user_id,
                    coupon.user.get_username(),
                    coupon.source,
                    selectors.derived_status(coupon, now=now),
                    timezone.localtime(coupon.created_at).isoformat(),
                    timezone.localtime(coupon.valid_until).isoformat(),
                    timezone.localtime(coupon.used_at).isoformat() if coupon.used_at else "",
                    order_of.get(coupon.pk, ""),
                ]
            )
        last_id = ids[-1]


# --- User coupons -----------------------------------------------------------------------------


COUPON_STATUS_LABELS = {
    "unused": gettext_lazy("unused"),
    "used": gettext_lazy("used"),
    "expired": gettext_lazy("expired"),
}


class DerivedStatusFilter(admin.SimpleListFilter):
    title = gettext_lazy("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return list(COUPON_STATUS_LABELS.items())

    def queryset(self, request, queryset):
        now = clock.now()
        match self.value():
            case "unused":
                return queryset.filter(
                    status=UserCoupon.Status.UNUSED, template__valid_until__gte=now
                )
            case "used":
                return queryset.filter(status=UserCoupon.Status.USED)
            case "expired":
                return queryset.filter(selectors.coupon_expired_q(now=now))
        return queryset


class ReadOnlyAdminMixin:
    """Coupons change only through claims and orders: the admin shows them, nothing more."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(UserCoupon)
class UserCouponAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "template_link", "user_link", "coupon_status", "claimed_at", "used"]
    list_filter = [DerivedStatusFilter]
    search_fields = ["user__username", "template__name"]
    list_select_related = ["template", "user"]
    fields = [
        "template_link",
        "user_link",
        "coupon_status",
        "claimed_at",
        "used",
        "order_link",
    ]
    readonly_fields = fields
    actions = None

    @admin.display(description=gettext_lazy("template"))
    def template_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:coupons_coupontemplate_change", args=[coupon.template_id])
        return format_html('<a href="{}">{}</a>', url, coupon.template.name)

    @admin.display(description=gettext_lazy("user"))
    def user_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:auth_user_change", args=[coupon.user_id])
        return format_html('<a href="{}">{}</a>', url, coupon.user.get_username())

    @admin.display(description=gettext_lazy("status"))
    def coupon_status(self, coupon: UserCoupon) -> str:
        return COUPON_STATUS_LABELS[selectors.derived_status(coupon, now=clock.now())]

    @admin.display(description=gettext_lazy("claimed at"), ordering="created_at")
    def claimed_at(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.created_at)

    @admin.display(description=gettext_lazy("used at"), ordering="used_at")
    def used(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.used_at)

    @admin.display(description=gettext_lazy("order"))
    def order_link(self, coupon: UserCoupon) -> str:
        orders = orders_lookup()(coupon_ids=[coupon.pk], limit=RECENT_ROWS)
        if not orders:
            return "–"
        return format_html(
            "<br>".join(['<a href="{}">#{} ({})</a>'] * len(orders)),
            *[part for order in orders for part in (order.admin_url, order.order_id, order.status)],
        )


class UserCouponInline(ReadOnlyAdminMixin, admin.TabularInline):
    """The user's newest coupons on their page; the full list is one link away."""

    model = UserCoupon
    fk_name = "user"  # not granted_by
    fields = ["coupon_link", "template", "coupon_status", "source", "claimed_at"]
    readonly_fields = fields
    extra = 0
    shown = 20
    verbose_name_plural = gettext_lazy("coupons (newest 20)")

    def get_queryset(self, request):
        newest = super().get_queryset(request).order_by("-id")
        return newest.select_related("template")

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        shown = self.shown

        class NewestOnly(formset):
            """An inline shows every row it is given: hand it the newest ones only (an id
            list, since a sliced queryset cannot be filtered further by the formset)."""

            def get_queryset(self):
                queryset = super().get_queryset()
                newest = list(queryset.values_list("pk", flat=True)[:shown])
                return queryset.filter(pk__in=newest)

        return NewestOnly

    @admin.display(description=gettext_lazy("coupon"))
    def coupon_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:coupons_usercoupon_change", args=[coupon.pk])
        return format_html('<a href="{}">#{}</a>', url, coupon.pk)

    @admin.display(description=gettext_lazy("status"))
    def coupon_status(self, coupon: UserCoupon) -> str:
        return COUPON_STATUS_LABELS[selectors.derived_status(coupon, now=clock.now())]

    @admin.display(description=gettext_lazy("claimed at"))
    def claimed_at(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.created_at)


class GrantToSelectedUsersForm(forms.Form):
    template = forms.ModelChoiceField(
        label=gettext_lazy("coupon template"),
        queryset=CouponTemplate.objects.order_by("-id"),
    )
    reason = forms.CharField(
        label=gettext_lazy("reason"),
        max_length=GRANT_REASON_MAX_LENGTH,
        help_text=gettext_lazy(
            "Recorded on each coupon. The same grant again (same reason) issues nothing twice."
        ),
    )


@admin.action(description=gettext_lazy("Grant a coupon to the selected users…"))
def grant_coupon_to_users(modeladmin, request, queryset):
    """From the user list: pick a template and a reason, then coupons.services.coupon_grant
    (the same service as the template's "Grant to users")."""
    user_ids = list(queryset.order_by("pk").values_list("pk", flat=True)[: MAX_GRANT_USERS + 1])
    if len(user_ids) > MAX_GRANT_USERS:
        modeladmin.message_user(
            request,
            _("Select at most %(count)d users.") % {"count": MAX_GRANT_USERS},
            messages.ERROR,
        )
        return None
    form = GrantToSelectedUsersForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        template = form.cleaned_data["template"]
        outcomes = admin_grants.grant_from_form(
            form, template=template, user_ids=user_ids, granted_by_id=request.user.pk
        )
        if outcomes is not None:
            modeladmin.message_user(
                request,
                _("Grant of %(template)s: %(outcomes)s.")
                % {"template": template, "outcomes": "; ".join(outcomes)},
            )
            return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": _("Grant a coupon to %(count)d users") % {"count": len(user_ids)},
        "form": form,
        "user_ids": user_ids,
        "opts": modeladmin.model._meta,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/coupons/grant_to_selected_users.html", context)


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class UserWithCouponsAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, UserCouponInline]
    actions = [grant_coupon_to_users]
