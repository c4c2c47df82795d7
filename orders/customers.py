"""Customers' order history as coupons sees it (coupons.customers.CustomerHistory), registered
by the setting COUPON_CUSTOMER_HISTORY: a new-customers coupon asks whether a user has ever
paid, without coupons importing us."""

from orders.models import Order


class OrdersCustomerHistory:
    def has_paid_order(self, *, user_id: int, using: str = "default") -> bool:
        # paid_at is set when an order is paid and never cleared (shipped and completed keep
        # it; only pending orders are cancelled), so the answer never goes back to False.
        paid = Order.objects.using(using).filter(user_id=user_id, paid_at__isnull=False)
        return paid.exists()
