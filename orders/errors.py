"""Order domain errors. Each has a stable `code`; api/exceptions.py gives it a status."""

from django.utils.translation import gettext_lazy as _

from core.domain_errors import DomainError


class OrderNotFound(DomainError):
    code = "not_found"
    default_detail = _("Order not found.")


class ProductNotFound(DomainError):
    code = "not_found"
    default_detail = _("Product not found.")


class OrderInvalid(DomainError):
    code = "invalid"
    default_detail = _("Invalid order.")


class OutOfStock(DomainError):
    code = "out_of_stock"
    default_detail = _("Not enough stock.")


class ThresholdNotMet(DomainError):
    code = "threshold_not_met"
    default_detail = _("The order total does not reach the coupon's threshold.")


class CouponNotApplicable(DomainError):
    code = "coupon_not_applicable"
    default_detail = _("No line of this order is in the coupon's scope.")


class TooManyUnpaidOrders(DomainError):
    code = "too_many_unpaid_orders"
    default_detail = _("Too many orders await payment; pay or cancel one first.")


class CouponNotAllowed(DomainError):
    code = "coupon_not_allowed"
    default_detail = _("Seckill orders cannot use a coupon.")


class OrderInvalidState(DomainError):
    code = "invalid_state"
    default_detail = _("The order cannot do this in its current state.")


class AmountMismatch(DomainError):
    code = "amount_mismatch"
    default_detail = _("The amount does not match what the order asks to pay.")
