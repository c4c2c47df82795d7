"""The Django admin: staff manage products; orders are shown read-only (they change only
through orders.services, which keep stock and coupons consistent)."""

from django.contrib import admin

from orders.models import Order, OrderItem, Product


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ["name", "price", "stock", "updated_at"]
    search_fields = ["name"]
    readonly_fields = ["created_at", "updated_at"]


class OrderItemInline(admin.TabularInline):
    model = OrderItem
    fields = ["product", "title", "unit_price", "quantity"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "order_type", "status", "total_amount", "pay_amount"]
    list_filter = ["status", "order_type"]
    inlines = [OrderItemInline]
    actions = None

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
