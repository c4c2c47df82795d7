"""Staff adjust a product's stock (SPEC section 20): one guarded UPDATE, so a concurrent
checkout's decrement is never undone; a staff action, checked and recorded."""

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from core import clock
from core.staff_audit import NOT_STAFF, StaffAudit
from orders.errors import OrderInvalid, OutOfStock, ProductNotFound
from orders.models import MAX_STOCK, Product


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
