"""The Django admin for orders (SPEC section 13): products with money entry and stock changed
only by atomic adjustments; orders read-only, with their coupon linked and a filter by coupon
template. Writes go through orders.services, which check the staff permission
(backoffice/staff_actions.py) and record stock adjustments and staff cancels with their amounts."""

from typing import TYPE_CHECKING, TypeAlias, TypedDict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db import models
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice.action_buttons import ButtonLook, looks
from backoffice.audit_admin import StaffHistoryAdmin
from backoffice.order_admin.refunds import RefundInline, RefundPagesAdmin
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core.admin_fields import MoneyField, ReadOnlyAdmin, RefusalAsFormErrorAdmin, RefusedOnSave
from core.domain_errors import DomainError
from core.limits import is_id_text
from core.money import format_money
from coupons.models import CouponTemplate
from orders import services, stock
from orders.errors import OrderInvalid, OutOfStock
from orders.models import (
    MAX_PRICE,
    MAX_STOCK,
    Category,
    Order,
    OrderItem,
    Product,
)


class ProductsIn(TypedDict):
    products_in: int


if TYPE_CHECKING:  # django-stubs' helper is a dev dependency: for mypy only
    from django_stubs_ext import WithAnnotations

    # A category as CategoryAdmin's list reads it, with its product count.
    CategoryWithCount: TypeAlias = WithAnnotations[Category, ProductsIn]


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    """Categories by name; a coupon's scope picks them by name (coupon_admin/forms.py)."""

    list_display = ["id", "name", "product_count"]
    list_display_links = ["id", "name"]
    search_fields = ["name"]

    def get_queryset(self, request):
        counted = super().get_queryset(request).annotate(products_in=models.Count("products"))
        return counted.order_by("name")  # a GROUP BY drops Meta.ordering

    @admin.display(description=gettext_lazy("products"), ordering="products_in")
    def product_count(self, category: "CategoryWithCount") -> int:
        return category.products_in


class ProductForm(forms.ModelForm):
    price = MoneyField(label=gettext_lazy("price"), max_cents=MAX_PRICE)
    stock_change = forms.IntegerField(
        label=gettext_lazy("stock adjustment"),
        required=False,
        min_value=-MAX_STOCK,
        max_value=MAX_STOCK,
        help_text=gettext_lazy(
            "Added to the stock as it is at the moment of saving (negative to take away), so "
            "orders placed meanwhile are never undone."
        ),
    )

    class Meta:
        model = Product
        fields = ["name", "category", "price", "stock"]

    def clean(self):
        cleaned = super().clean()
        change = cleaned.get("stock_change")
        if self.instance.pk and change and self.instance.stock + change < 0:
            self.add_error(
                "stock_change",
                _("Only %(stock)s in stock; cannot take away %(change)s.")
                % {"stock": self.instance.stock, "change": -change},
            )
        return cleaned


@admin.register(Product)
class ProductAdmin(StaffHistoryAdmin, RefusalAsFormErrorAdmin):
    form = ProductForm
    list_display = ["id", "name", "category", "price_display", "stock", "updated_at"]
    list_display_links = ["id", "name"]
    list_filter = ["category"]
    list_select_related = ["category"]
    search_fields = ["name", "=id"]
    autocomplete_fields = ["category"]

    def has_adjust_stock_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.STOCK_ADJUST)

    def get_fields(self, request, obj=None):
        # New product: its opening stock. Existing one: stock is shown, and changed only by an
        # adjustment applied as one UPDATE ... SET stock = stock + change, by whoever may.
        if obj is None:
            return ["name", "category", "price", "stock"]
        adjust = ["stock_change"] if self.has_adjust_stock_permission(request) else []
        return ["name", "category", "price", "stock", *adjust, "created_at", "updated_at"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None and not self.has_adjust_stock_permission(request):
            # A declared form field stays unless removed, even when not in the fields.
            form = type(form.__name__, (form,), {"stock_change": None})
        return form

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["stock", "created_at", "updated_at"]

    @admin.display(description=gettext_lazy("price"), ordering="price")
    def price_display(self, product: Product) -> str:
        return format_money(product.price)

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.save()
            return
        # Never obj.save(): it would write back the stock read when the page was built.
        obj.save(update_fields=["name", "category", "price", "updated_at"])
        stock_change = form.cleaned_data.get("stock_change")
        if stock_change and not self.has_adjust_stock_permission(request):
            raise PermissionDenied
        if stock_change:
            try:
                stock.product_stock_adjust(
                    product_id=obj.pk,
                    change=stock_change,
                    audit=staff_audit(request.user, StaffAction.STOCK_ADJUST),
                )
            except (OutOfStock, OrderInvalid) as error:
                raise RefusedOnSave({"stock_change": [str(error.detail)]}) from error

    def construct_change_message(self, request, form, formsets, add=False):
        # The adjustment is recorded by the service with its amounts; Django's own entry
        # keeps only the product's other fields.
        if "stock_change" in form.changed_data:
            form.changed_data.remove("stock_change")
        return super().construct_change_message(request, form, formsets, add)

    def log_change(self, request, obj, message):
        if not message:  # only the stock changed: the service's entry says it all
            return None
        return super().log_change(request, obj, message)


class OrderItemInline(admin.TabularInline):
    model = OrderItem
    readonly_fields = (
        "product",
        "title",
        "unit_price_display",
        "quantity",
        "discount_share",
        "refunded_quantity",
    )
    fields = readonly_fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description=gettext_lazy("unit price"))
    def unit_price_display(self, item: OrderItem) -> str:
        return format_money(item.unit_price)

    @admin.display(description=gettext_lazy("discount"))
    def discount_share(self, item: OrderItem) -> str:
        return format_money(getattr(item, "discount_amount", None))


class CouponTemplateFilter(admin.SimpleListFilter):
    """Orders whose coupon came from one template (the newest templates are listed; any
    template id works in the URL)."""

    title = gettext_lazy("coupon template")
    parameter_name = "coupon_template"
    listed = 30

    def lookups(self, request, model_admin):
        selected = self.value()
        selected_id = int(selected) if selected and is_id_text(selected) else None
        # The newest templates, plus the chosen one when it is older.
        templates = list(
            CouponTemplate.objects.order_by("-id").values_list("pk", "name")[: self.listed]
        )
        if selected_id is not None and selected_id not in {pk for pk, _ in templates}:
            templates += CouponTemplate.objects.filter(pk=selected_id).values_list("pk", "name")
        return [(str(pk), name) for pk, name in templates]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not is_id_text(value):
            raise IncorrectLookupParameters(value)
        return queryset.filter(coupon__template_id=int(value))


@admin.register(Order)
class OrderAdmin(RefundPagesAdmin, StaffHistoryAdmin, ReadOnlyAdmin):
    list_display = [
        "id",
        "user",
        "order_type",
        "status",
        "total",
        "coupon_link",
        "discount",
        "pay",
        "refunded",
        "created_at",
    ]
    list_filter = ["status", "order_type", CouponTemplateFilter]
    list_select_related = ["user"]
    search_fields = ["user__username"]
    readonly_fields = (
        "user",
        "order_type",
        "status",
        "total",
        "coupon_link",
        "discount",
        "pay",
        "expire_at",
        "paid_at",
        "cancelled_at",
        "refunded_at",
        "refunded",
        "created_at",
    )
    fields = readonly_fields
    inlines = [OrderItemInline, RefundInline]
    change_form_template = "admin/orders/order/change_form.html"
    actions = ["cancel_orders", "refund_orders"]

    def has_cancel_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.ORDER_CANCEL)

    @admin.action(description=gettext_lazy("Cancel the selected orders"), permissions=["cancel"])
    @looks(ButtonLook.GIVE_BACK)
    def cancel_orders(self, request, queryset) -> TemplateResponse | None:
        """Through orders.services.order_cancel, as the shopper's own cancel: stock and coupon
        go back in the order's transaction. Only orders awaiting payment can be cancelled."""
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        chosen = list(queryset.order_by("pk")[: self.list_per_page])
        if "confirm" not in request.POST:  # a page listing them first, never one click
            return TemplateResponse(
                request,
                "admin/orders/order/cancel_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": _("Cancel orders"),
                    "opts": self.model._meta,
                    "orders": chosen,
                    "rows": [(order, format_money(order.pay_amount)) for order in chosen],
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                },
            )
        cancelled, refused, coupons_back = [], [], 0
        for order in chosen:
            try:
                services.order_cancel(
                    user_id=order.user_id,
                    order_id=order.pk,
                    audit=staff_audit(request.user, StaffAction.ORDER_CANCEL),
                )
            except DomainError:
                refused.append(order.pk)
            else:
                cancelled.append(order.pk)  # recorded in its history by the service
                coupons_back += order.coupon_id is not None
        if cancelled:
            # Says the coupons that came back, not one per order (it said so with none).
            self.message_user(
                request,
                ngettext(
                    "Cancelled %(count)d order: its stock returned; coupons returned: %(coupons)d.",
                    "Cancelled %(count)d orders: their stock returned; coupons returned: "
                    "%(coupons)d.",
                    len(cancelled),
                )
                % {"count": len(cancelled), "coupons": coupons_back},
                messages.SUCCESS,
            )
        if refused:
            self.message_user(
                request,
                _("Not cancelled (only an order awaiting payment can be): %(orders)s.")
                % {"orders": ", ".join(f"#{pk}" for pk in refused)},
                messages.WARNING,
            )
        return None  # back to the list, with the messages

    @admin.display(description=gettext_lazy("refunded amount"), ordering="refunded_amount")
    def refunded(self, order: Order) -> str:
        return format_money(order.refunded_amount)

    @admin.display(description=gettext_lazy("total"), ordering="total_amount")
    def total(self, order: Order) -> str:
        return format_money(order.total_amount)

    @admin.display(description=gettext_lazy("discount"), ordering="discount_amount")
    def discount(self, order: Order) -> str:
        return format_money(order.discount_amount) if order.coupon_id else "–"

    @admin.display(description=gettext_lazy("to pay"), ordering="pay_amount")
    def pay(self, order: Order) -> str:
        return format_money(order.pay_amount)

    @admin.display(description=gettext_lazy("coupon"))
    def coupon_link(self, order: Order) -> str:
        if order.coupon_id is None:
            return "–"
        url = reverse("admin:coupons_usercoupon_change", args=[order.coupon_id])
        return format_html('<a href="{}">#{}</a>', url, order.coupon_id)
