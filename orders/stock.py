"""A product's stock: taken by a checkout and given back by a cancel or an expiry, each line
with a guarded UPDATE in ascending product id order (the lock order), inside the caller's
transaction; and adjusted by staff (SPEC section 20): one guarded UPDATE, so a concurrent
checkout's decrement is never undone; a staff action, checked and recorded."""

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from core import clock
from core.staff_audit import NOT_STAFF, StaffAudit
from orders.errors import OrderInvalid, OutOfStock, ProductNotFound
from orders.lines import ProductQuantity
from orders.models import MAX_STOCK, Order, Product


def product_stock_adjust(*, product_id: int, change: int, audit: StaffAudit = NOT_STAFF) -> int:
    """Add `change` (negative to take away) to a product's stock in one conditional UPDATE, so
    a concurrent checkout's decrement is never undone; refuses to go below zero or above
    MAX_STOCK with OutOfStock / OrderInvalid. The door's `audit` asks orders.adjust_stock and
    records it with the change and the stock after it. Returns the new stock. Runs in its own
    transaction."""
    audit.check()
    with transaction.atomic():
        changed = Product.objects.filter(
            pk=product_id, stock__gte=-change, stock__lte=MAX_STOCK - change
        ).update(stock=F("stock") + change, updated_at=clock.now())
        product = Product.objects.filter(pk=product_id).first()
        stock = None if product is None else product.stock
        if changed and product is not None:
            audit.record(product, {"change": change, "stock": product.stock})
    if stock is None:
        raise ProductNotFound()
    if not changed:
        if stock + change < 0:
            raise OutOfStock(
                _("Only %(stock)s in stock; cannot take away %(change)s.")
                % {"stock": stock, "change": -change}
            )
        raise OrderInvalid(_("Stock cannot exceed %(count)d.") % {"count": MAX_STOCK})
    return stock


def stock_take(lines: list[ProductQuantity]) -> dict[int, Product]:
    """Take stock for each line with a guarded UPDATE (never below zero), in ascending product
    id order, and return the products as the locked rows now stand. Inside a transaction."""
    for line in lines:
        taken = Product.objects.filter(pk=line.product_id, stock__gte=line.quantity).update(
            stock=F("stock") - line.quantity
        )
        if not taken:
            if not Product.objects.filter(pk=line.product_id).exists():
                raise ProductNotFound(_("Product %(id)s not found.") % {"id": line.product_id})
            raise OutOfStock(_("Not enough stock for product %(id)s.") % {"id": line.product_id})
    # The UPDATEs hold these rows' locks, so the prices read here are the ones charged.
    return Product.objects.in_bulk([line.product_id for line in lines])


def stock_return(order: Order) -> None:
    """Put back the stock of every line, in ascending product id order. Inside a transaction."""
    for item in sorted(order.items.all(), key=lambda item: item.product_id):
        Product.objects.filter(pk=item.product_id).update(stock=F("stock") + item.quantity)
