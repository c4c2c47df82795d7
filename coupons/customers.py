"""What coupons may know of a user's orders, without importing them (SPEC section 18).

A template for new customers only (audience `new_customers`) is issued to users with no paid
order. `coupons` must not import `orders`, so the lookup is injected, as the scope catalog is
(coupons/catalog.py): the setting COUPON_CUSTOMER_HISTORY names a callable (the orders app
provides `orders.customers.OrdersCustomerHistory`) returning an object with this Protocol."""

from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string


class CustomerHistory(Protocol):
    def has_paid_order(self, *, user_id: int, using: str = "default") -> bool:
        """Whether the user has ever paid for an order, read on the database connection
        `using` (the issuing core asks inside its decision transaction, on the decision's
        connection). Must read committed data at the time of the call (no cache), and once
        true it must stay true (a paid order is never unpaid)."""
        ...

    def paid_among(self, *, user_ids: list[int]) -> set[int]:
        """Which of these users have ever paid for an order, in one read (a grant's batch)."""
        ...


def customer_history() -> CustomerHistory:
    path = getattr(settings, "COUPON_CUSTOMER_HISTORY", "")
    if not path:
        # Without it nobody could be told apart: refusing to guess beats issuing a
        # new-customer coupon to everyone.
        raise ImproperlyConfigured("COUPON_CUSTOMER_HISTORY must name a customer history.")
    return import_string(path)()
