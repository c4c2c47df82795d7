"""What the database holds of the order flow, to compare before and after a failure."""

from coupons.models import UserCoupon
from orders.models import Order, OrderItem, Product


def snapshot() -> dict:
    """Everything an order flow may change, to assert that a failure changed none of it."""
    return {
        "orders": list(Order.objects.order_by("pk").values()),
        "items": list(OrderItem.objects.order_by("pk").values()),
        "stock": dict(Product.objects.values_list("pk", "stock")),
        "coupons": list(UserCoupon.objects.order_by("pk").values("pk", "status", "used_at")),
    }
