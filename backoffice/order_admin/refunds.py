"""The orders admin's refunds (SPEC section 25, decision 0613): the selected orders refunded
whole after a confirmation page asking the reason, and one order's page refunding units of its
lines; each through orders.refunds.order_refund. OrderAdmin (backoffice/order_admin/orders.py)
builds on this."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice.action_buttons import ButtonLook, looks
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core.domain_errors import DomainError
from core.limits import is_id_text
from core.money import format_money
from orders import refunds
from orders.errors import OrderInvalid
from orders.models import PAID_STATUSES, REFUND_REASON_MAX_LENGTH, Order, OrderItem, Refund


class RefundInline(admin.TabularInline):
    """The order's refunds: when, how much, why, by whom (read-only)."""

    model = Refund
    readonly_fields = ("created_at", "amount_display", "reason", "coupon_returned", "refunded_by")
    fields = readonly_fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description=gettext_lazy("amount"))
    def amount_display(self, refund: Refund) -> str:
        return format_money(refund.amount)


class RefundReasonForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("reason"),
        max_length=REFUND_REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("Why the money goes back: kept with the refund and in the history."),
    )


class PartialRefundForm(RefundReasonForm):
    """A quantity per line (0 to what is left), and the reason."""

    def __init__(self, *args, items: list[OrderItem], **kwargs):
        super().__init__(*args, **kwargs)
        self.items = items
        for item in items:
            left = item.quantity - item.refunded_quantity
            self.fields[f"line_{item.pk}"] = forms.IntegerField(
                label=item.title, min_value=0, max_value=left, initial=left, required=True
            )

    def clean(self):
        cleaned = super().clean()
        if not self.errors and not self.units():
            raise forms.ValidationError(_("Name at least one unit to refund."))
        return cleaned

    def units(self) -> dict[int, int]:
        return {
            item.pk: self.cleaned_data[f"line_{item.pk}"]
            for item in self.items
            if self.cleaned_data.get(f"line_{item.pk}")
        }


class RefundPagesAdmin(admin.ModelAdmin):
    """The refund action and pages of OrderAdmin."""

    def has_refund_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.ORDER_REFUND)

    @admin.action(description=gettext_lazy("Refund the selected orders"), permissions=["refund"])
    @looks(ButtonLook.GIVE_BACK)
    def refund_orders(self, request, queryset):
        """Whole refunds through orders.refunds.order_refund, after a confirmation page that
        lists the orders and asks for the reason (required). Stock back, the coupon back while
        its window is open, each refund recorded with its amount and reason. Orders never paid
        (or cancelled) are refused; one refunded already is left as it is."""
        if not self.has_refund_permission(request):
            raise PermissionDenied
        orders = list(queryset.order_by("pk")[: self.list_per_page])
        form = RefundReasonForm(request.POST if "confirm" in request.POST else None)
        if not form.is_valid():
            return TemplateResponse(
                request,
                "admin/orders/order/refund_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": _("Refund orders"),
                    "opts": self.model._meta,
                    "orders": orders,
                    "rows": [
                        (order, format_money(order.pay_amount), format_money(order.refunded_amount))
                        for order in orders
                    ],
                    "form": form,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                },
            )
        refunded, refused = [], []
        for order in orders:
            if order.status == Order.Status.REFUNDED:
                continue  # nothing to do twice
            try:
                refunds.order_refund(
                    order_id=order.pk,
                    reason=form.cleaned_data["reason"],
                    refunded_by_id=request.user.pk,
                    audit=staff_audit(request.user, StaffAction.ORDER_REFUND),
                )
            except DomainError:
                refused.append(order.pk)
            else:
                refunded.append(order.pk)
        if refunded:
            self.message_user(
                request,
                ngettext(
                    "Refunded %(count)d order: stock returned, its coupon too if still valid.",
                    "Refunded %(count)d orders: stock returned, coupons too if still valid.",
                    len(refunded),
                )
                % {"count": len(refunded)},
                messages.SUCCESS,
            )
        if refused:
            self.message_user(
                request,
                _("Not refunded (only a paid, shipped or completed order can be): %(orders)s.")
                % {"orders": ", ".join(f"#{pk}" for pk in refused)},
                messages.WARNING,
            )
        return None

    def get_urls(self):
        return [
            path(
                "<path:object_id>/refund/",
                self.admin_site.admin_view(self.refund_view),
                name="orders_order_refund",
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = dict(extra_context or {})
        order = (
            Order.objects.filter(pk=object_id).only("status").first()
            if is_id_text(object_id)
            else None
        )
        if (
            order is not None
            and order.status in PAID_STATUSES
            and self.has_refund_permission(request)
        ):
            context["refund_url"] = reverse("admin:orders_order_refund", args=[object_id])
        return super().change_view(request, object_id, form_url, context)

    def refund_view(self, request, object_id: str):
        """Refund some units of some lines, or all, of one order, with a reason."""
        if not self.has_refund_permission(request):
            raise PermissionDenied
        order = Order.objects.filter(pk=object_id).first() if is_id_text(object_id) else None
        if order is None:
            raise Http404
        items = list(order.items.order_by("pk"))
        form = PartialRefundForm(request.POST or None, items=items)
        quote = refunds.refund_money(items, form.units()) if form.is_valid() else None
        # The amount is shown before anything is refunded; what is confirmed is that amount
        # (quantities changed on the confirmation page are quoted again, not refunded).
        confirmed = quote is not None and request.POST.get("confirm") == str(quote)
        if confirmed:
            try:
                outcome = refunds.order_refund(
                    order_id=order.pk,
                    reason=form.cleaned_data["reason"],
                    lines=form.units(),
                    refunded_by_id=request.user.pk,
                    audit=staff_audit(request.user, StaffAction.ORDER_REFUND),
                )
            except OrderInvalid as error:
                for field, problems in (error.fields or {}).items():
                    form.add_error("reason" if field == "reason" else None, problems)
            except DomainError as error:
                form.add_error(None, str(error.detail))
            else:
                amount = outcome.refund.amount if outcome.refund is not None else 0
                self.message_user(
                    request,
                    _("Refunded %(amount)s of order #%(order)s.")
                    % {"amount": format_money(amount), "order": order.pk},
                    messages.SUCCESS,
                )
                return redirect("admin:orders_order_change", order.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Refund order #%(order)s") % {"order": order.pk},
            "opts": self.model._meta,
            "original": order,
            "order": order,
            "form": form,
            "lines": [(item, form[f"line_{item.pk}"]) for item in items],
            "left_to_refund": format_money(order.pay_amount - order.refunded_amount),
            "quote": quote,
            "quote_money": format_money(quote or 0),
        }
        return TemplateResponse(request, "admin/orders/order/refund.html", context)
