"""The operator's Django admin for coupons (SPEC section 13): templates with their funnel, chart
and CSV export, user coupons read-only (also inline on a user's page). Every write goes through
coupons.services, so the rules are the API's; a template with claims cannot be deleted."""

import csv
from collections.abc import Iterator

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from config import clock
from config.admin_support import MoneyField, RefusalAsFormErrorAdmin, RefusedOnSave
from config.money import MoneyInvalid, format_money, parse_money
from coupons import selectors, services
from coupons.admin_chart import activity_chart_svg
from coupons.errors import TemplateInvalid
from coupons.models import MAX_AMOUNT, CouponTemplate, UserCoupon
from coupons.rules import ClaimState, template_state_where

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


class CouponTemplateForm(forms.ModelForm):
    value = MoneyField(label=gettext_lazy("value"), min_cents=1, max_cents=MAX_AMOUNT)
    min_amount = MoneyField(
        label=gettext_lazy("minimum order"),
        max_cents=MAX_AMOUNT,
        required=False,
        help_text=gettext_lazy("Threshold coupons only: the order total needed, e.g. 200.00."),
    )

    class Meta:
        model = CouponTemplate
        fields = list(services.TEMPLATE_TERMS)

    def clean(self):
        cleaned = super().clean()
        if "min_amount" in self.fields and cleaned.get("min_amount") is None:
            cleaned["min_amount"] = 0
        current = self.instance if self.instance.pk else None
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
            posted = self.data[field]
            if field in ("value", "min_amount"):
                try:
                    posted = parse_money(posted or "0")
                except MoneyInvalid:
                    pass
            if posted != getattr(current, field):
                self.add_error(
                    None,
                    _(
                        "A coupon was claimed while you were editing, so “%(field)s” can no "
                        "longer change. Nothing was saved."
                    )
                    % {"field": CouponTemplate._meta.get_field(field).verbose_name},
                )


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


STATE_LABELS = {
    "not_started": gettext_lazy("not started"),
    "active": gettext_lazy("active"),
    "sold_out": gettext_lazy("sold out"),
    "ended": gettext_lazy("ended"),
}


def terms_text(template: CouponTemplate) -> str:
    if template.type == CouponTemplate.Type.THRESHOLD:
        return _("%(value)s off orders of %(minimum)s or more") % {
            "value": format_money(template.value),
            "minimum": format_money(template.min_amount),
        }
    return _("%(value)s off") % {"value": format_money(template.value)}


def rate_text(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1%}"


class TemplateDeleteRefused(Exception):
    """The delete service refused under the row lock (a claim landed meanwhile)."""


@admin.register(CouponTemplate)
class CouponTemplateAdmin(RefusalAsFormErrorAdmin):
    form = CouponTemplateForm
    change_form_template = "admin/coupons/coupontemplate/change_form.html"
    list_display = [
        "name",
        "terms",
        "window",
        "claimed_of_total",
        "used",
        "expired",
        "redemption_rate",
        "state",
    ]
    list_filter = ["type", StateFilter]
    search_fields = ["name"]
    readonly_fields = ["claimed_count", "created_at", "updated_at"]
    actions = None  # the bulk delete action would bypass the "no delete once claimed" rule

    def get_queryset(self, request):
        return selectors.templates_with_funnel(now=clock.now())

    # Once claimed, the frozen terms are shown read-only, money as money (a read-only model
    # field would show raw cents).
    FROZEN_SHOWN_AS = {"type": "type", "value": "value_money", "min_amount": "min_amount_money"}

    def get_fields(self, request, obj=None):
        terms = [self.FROZEN_SHOWN_AS.get(field, field) for field in services.TEMPLATE_TERMS]
        if obj is None:
            return list(services.TEMPLATE_TERMS)
        if obj.claimed_count == 0:
            return [*services.TEMPLATE_TERMS, *self.readonly_fields]
        return [*terms, *self.readonly_fields]

    def get_exclude(self, request, obj=None):
        # Without this the model's own (cents) fields would stand in for the money fields.
        return ["value", "min_amount"] if obj is not None and obj.claimed_count > 0 else None

    def get_readonly_fields(self, request, obj=None):
        if obj is None or obj.claimed_count == 0:
            return self.readonly_fields
        return [*self.FROZEN_SHOWN_AS.values(), *self.readonly_fields]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None and obj.claimed_count > 0:
            # The money fields are declared on the form, so the admin keeps them unless told.
            form = type(form.__name__, (form,), {"value": None, "min_amount": None})
        return form

    @admin.display(description=gettext_lazy("value"))
    def value_money(self, template: CouponTemplate) -> str:
        return format_money(template.value)

    @admin.display(description=gettext_lazy("minimum order"))
    def min_amount_money(self, template: CouponTemplate) -> str:
        return format_money(template.min_amount)

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
        return [
            path("<path:object_id>/coupons.csv", export, name="coupons_coupontemplate_export"),
            *super().get_urls(),
        ]

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
            "window_help": _(
                "Coupons already claimed are usable within this window too: changing it "
                "changes who may still claim and when the coupons people hold can be used."
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


CSV_HEADER = ["coupon_id", "user_id", "username", "status", "claimed_at", "used_at", "order_id"]


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
                    selectors.derived_status(coupon, now=now),
                    timezone.localtime(coupon.created_at).isoformat(),
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
    fields = ["coupon_link", "template", "coupon_status", "claimed_at"]
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


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class UserWithCouponsAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, UserCouponInline]
