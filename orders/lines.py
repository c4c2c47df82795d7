"""An order's lines: as the API takes them, validated into the lock order, and as the coupon
rules see them. Shared by the checkout (orders/services.py) and the coupon options for a cart
(orders/selectors.py)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from django.conf import settings
from django.utils.translation import gettext as _

from coupons import ports
from orders.errors import OrderInvalid
from orders.models import MAX_LINES, Product


class OrderLine(TypedDict):
    """One line of an order as the API takes it."""

    product_id: int
    quantity: int


@dataclass(frozen=True, order=True)
class ProductQuantity:
    """One validated line: a product and how many of it. Ordered by product id, the lock
    order of the checkout's stock take (orders/services.py)."""

    product_id: int
    quantity: int


def order_lines_validate(items: Sequence[OrderLine]) -> list[ProductQuantity]:
    """The lines sorted by product id: the lock order of the checkout's stock take."""
    if not 1 <= len(items) <= MAX_LINES:
        raise OrderInvalid(
            fields={
                "items": [_("Between 1 and %(count)d lines are required.") % {"count": MAX_LINES}]
            }
        )
    lines = sorted(ProductQuantity(item["product_id"], item["quantity"]) for item in items)
    product_ids = [line.product_id for line in lines]
    if len(set(product_ids)) != len(product_ids):
        raise OrderInvalid(fields={"items": [_("Each product may appear only once.")]})
    # The per-line cap (ORDER_LINE_MAX_QUANTITY, at most the schema's MAX_QUANTITY): one
    # unpaid order must not hold a product's whole stock (SPEC section 20, decision 0630).
    cap = settings.ORDER_LINE_MAX_QUANTITY
    if any(not 1 <= line.quantity <= cap for line in lines):
        raise OrderInvalid(
            fields={"items": [_("Quantity must be 1 to %(count)d per line.") % {"count": cap}]}
        )
    return lines


def cart_lines(lines: list[ProductQuantity], products: dict[int, Product]) -> list[ports.CartLine]:
    """The order's lines as the coupon rules see them: product, category, amount, unit price."""
    return [
        ports.CartLine(
            product_id=line.product_id,
            category_id=products[line.product_id].category_id,
            amount=products[line.product_id].price * line.quantity,
            unit_price=products[line.product_id].price,
        )
        for line in lines
    ]
