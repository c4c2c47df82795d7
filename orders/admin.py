"""The Django admin for orders (SPEC section 13): products with money entry and stock changed
only by atomic adjustments; orders read-only, with their coupon linked and a filter by coupon
template. Writes go through orders.services."""

from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.admin_fields import MoneyField, RefusalAsFormErrorAdmin, RefusedOnSave
from core.money import format_money
from coupons import ports
from orders import services
from orders.errors import OrderInvalid, OutOfStock
from orders.models import MAX_PRICE, MAX_STOCK, Order, OrderItem, Product


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
        fields = ["name", "price", "stock"]

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
class ProductAdmin(RefusalAsFormErrorAdmin):
    form = ProductForm
    list_display = ["name", "price_display", "stock", "updated_at"]
    search_fields = ["name"]

    def get_fields(self, request, obj=None):
        # New product: its opening stock. Existing one: stock is shown, and changed only by an
        # adjustment applied as one UPDATE ... SET stock = stock + change.
        if obj is None:
            return ["name", "price", "stock"]
        return ["name", "price", "stock", "stock_change", "created_at", "updated_at"]

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
        obj.save(update_fields=["name", "price", "updated_at"])
        stock_change = form.cleaned_data.get("stock_change")
        if stock_change:
            try:
                services.product_stock_adjust(product_id=obj.pk, change=stock_change)
            except (OutOfStock, OrderInvalid) as error:
                raise RefusedOnSave({"stock_change": [str(error.detail)]}) from error


class OrderItemInline(admin.TabularInline):
    model = OrderItem
    readonly_fields = ("product", "title", "unit_price_display", "quantity", "discount_share")
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
        selected_id = int(selected) if selected and selected.isdigit() else None
        names = ports.template_names(limit=self.listed, template_id=selected_id)
        return [(str(name.template_id), name.name) for name in names]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not (value.isascii() and value.isdigit() and len(value) <= 18):
            raise IncorrectLookupParameters(value)
        return queryset.filter(coupon__template_id=int(value))


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "user",
        "order_type",
        "status",
        "total",
        "coupon_link",
        "discount",
        "pay",
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
        "created_at",
    )
    fields = readonly_fields
    inlines = [OrderItemInline]
    actions = None

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

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
