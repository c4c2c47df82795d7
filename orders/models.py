from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# Bounds that keep every sum of money far inside a signed BIGINT: at most MAX_LINES lines of at
# most MAX_QUANTITY units at most MAX_PRICE cents each (50 * 999 * 10^11 < 2^63). A client
# sending more gets a 400, never an overflow.
MAX_PRICE = 10**11
MAX_QUANTITY = 999
MAX_LINES = 50
MAX_STOCK = 2**31 - 1
REFUND_REASON_MAX_LENGTH = 500


class Category(models.Model):
    """A product category: what a coupon scoped to categories names by id."""

    name = models.CharField(max_length=64, unique=True, verbose_name=_("name"))

    class Meta:
        db_table = "categories"
        verbose_name = _("category")
        verbose_name_plural = _("categories")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Product(models.Model):
    name = models.CharField(max_length=128, verbose_name=_("name"))
    # Optional: an uncategorised product is in no category's scope. PROTECT, so a category
    # that products (and coupons, by id) still name is not lost by accident.
    category = models.ForeignKey(
        Category,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="products",
        verbose_name=_("category"),
    )
    price = models.BigIntegerField(
        help_text=_("Unit price in cents."),
        validators=[MinValueValidator(0), MaxValueValidator(MAX_PRICE)],
        verbose_name=_("price"),
    )
    stock = models.IntegerField(
        validators=[MinValueValidator(0), MaxValueValidator(MAX_STOCK)], verbose_name=_("stock")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        db_table = "products"
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["id"]
        permissions = [("adjust_stock", "Can adjust stock")]
        constraints = [
            models.CheckConstraint(
                condition=Q(price__gte=0, price__lte=MAX_PRICE), name="product_price_in_range"
            ),
            models.CheckConstraint(condition=Q(stock__gte=0), name="product_stock_not_negative"),
        ]

    def __str__(self) -> str:
        return self.name


class Order(models.Model):
    class Type(models.TextChoices):
        NORMAL = "normal", _("normal")
        SECKILL = "seckill", _("seckill")

    class Status(models.TextChoices):
        PENDING_PAYMENT = "pending_payment", _("awaiting payment")
        PAID = "paid", _("paid")
        SHIPPED = "shipped", _("shipped")
        COMPLETED = "completed", _("completed")
        CANCELLED = "cancelled", _("cancelled")
        REFUNDED = "refunded", _("refunded")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="orders",
        db_index=False,
        verbose_name=_("user"),
    )
    order_type = models.CharField(
        max_length=16, choices=Type.choices, default=Type.NORMAL, verbose_name=_("order type")
    )
    status = models.CharField(
        max_length=16,
        choices=Status.choices,
        default=Status.PENDING_PAYMENT,
        verbose_name=_("status"),
    )
    total_amount = models.BigIntegerField(
        help_text=_("Sum of the lines, in cents."), verbose_name=_("total amount")
    )
    discount_amount = models.BigIntegerField(
        default=0, help_text=_("Coupon discount, in cents."), verbose_name=_("discount amount")
    )
    pay_amount = models.BigIntegerField(
        help_text=_("What the shopper pays, in cents."), verbose_name=_("pay amount")
    )
    # A string reference: orders knows coupons only through coupons.ports. RESTRICT keeps the
    # coupon while its order exists, yet lets a user's deletion cascade to both.
    coupon = models.ForeignKey(
        "coupons.UserCoupon",
        on_delete=models.RESTRICT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("coupon"),
    )
    expire_at = models.DateTimeField(
        help_text=_("Unpaid after this moment: cancelled."), verbose_name=_("expire at")
    )
    paid_at = models.DateTimeField(null=True, blank=True, verbose_name=_("paid at"))
    cancelled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("cancelled at"))
    refunded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("refunded at"))
    # What refunds gave back so far, in cents (orders/refunds.py): the pay amount once the
    # whole order is refunded (status refunded); less while only some lines are.
    refunded_amount = models.BigIntegerField(
        default=0, db_default=0, verbose_name=_("refunded amount")
    )
    # Set from core.clock by the services, like every other time of the order.
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        db_table = "orders"
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-id"]
        permissions = [
            ("cancel_order", "Can cancel orders"),
            ("refund_order", "Can refund orders"),
        ]
        indexes = [
            models.Index(fields=["user", "id"], name="order_user_id"),
            models.Index(fields=["status", "expire_at"], name="order_status_expire_at"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(order_type__in=["normal", "seckill"]), name="order_type_known"
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "pending_payment",
                        "paid",
                        "shipped",
                        "completed",
                        "cancelled",
                        "refunded",
                    ]
                ),
                name="order_status_known",
            ),
            models.CheckConstraint(
                condition=Q(total_amount__gte=0, discount_amount__gte=0, pay_amount__gte=0),
                name="order_amounts_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(discount_amount__lte=F("total_amount")),
                name="order_discount_within_total",
            ),
            models.CheckConstraint(
                condition=Q(total_amount=F("discount_amount") + F("pay_amount")),
                name="order_amounts_add_up",
            ),
            models.CheckConstraint(
                condition=Q(order_type="normal") | Q(coupon__isnull=True),
                name="order_seckill_without_coupon",
            ),
            models.CheckConstraint(
                condition=Q(coupon__isnull=False) | Q(discount_amount=0),
                name="order_discount_needs_coupon",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["paid", "shipped", "completed", "refunded"], paid_at__isnull=False
                )
                | Q(status__in=["pending_payment", "cancelled"], paid_at__isnull=True),
                name="order_paid_at_matches_status",
            ),
            models.CheckConstraint(
                condition=Q(status="cancelled", cancelled_at__isnull=False)
                | (~Q(status="cancelled") & Q(cancelled_at__isnull=True)),
                name="order_cancelled_at_matches_status",
            ),
            models.CheckConstraint(
                condition=Q(status="refunded", refunded_at__isnull=False)
                | (~Q(status="refunded") & Q(refunded_at__isnull=True)),
                name="order_refunded_at_matches_status",
            ),
        ]

    def __str__(self) -> str:
        return _("Order #%(id)s (%(status)s)") % {
            "id": self.pk,
            "status": self.get_status_display(),
        }


# An order paid for and not given back: what a coupon's use counts for (the use rate, 核销率).
PAID_STATUSES = (Order.Status.PAID, Order.Status.SHIPPED, Order.Status.COMPLETED)


class OrderItem(models.Model):
    # The unique (order, product) index below leads with order, so no separate index.
    order = models.ForeignKey(
        Order,
        on_delete=models.CASCADE,
        related_name="items",
        db_index=False,
        verbose_name=_("order"),
    )
    product = models.ForeignKey(
        Product, on_delete=models.PROTECT, related_name="+", verbose_name=_("product")
    )
    # Snapshots: what the shopper saw and paid, whatever the product becomes later.
    title = models.CharField(max_length=128, verbose_name=_("title"))
    unit_price = models.BigIntegerField(verbose_name=_("unit price"))
    quantity = models.IntegerField(verbose_name=_("quantity"))
    # This line's part of the order's coupon discount (largest remainder split), for refunds.
    discount_amount = models.BigIntegerField(default=0, verbose_name=_("discount amount"))
    # Units of this line refunded so far (orders/refunds.py).
    refunded_quantity = models.IntegerField(
        default=0, db_default=0, verbose_name=_("refunded quantity")
    )

    class Meta:
        db_table = "order_items"
        verbose_name = _("order line")
        verbose_name_plural = _("order lines")
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(quantity__gte=1, quantity__lte=MAX_QUANTITY),
                name="order_item_quantity_in_range",
            ),
            models.CheckConstraint(
                condition=Q(refunded_quantity__gte=0, refunded_quantity__lte=F("quantity")),
                name="order_item_refunded_within_quantity",
            ),
            models.CheckConstraint(
                condition=Q(unit_price__gte=0, unit_price__lte=MAX_PRICE),
                name="order_item_unit_price_in_range",
            ),
            models.UniqueConstraint(
                fields=["order", "product"], name="order_item_one_line_per_product"
            ),
            models.CheckConstraint(
                condition=Q(discount_amount__gte=0)
                & Q(discount_amount__lte=F("unit_price") * F("quantity")),
                name="order_item_discount_within_line",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.title}"


class Refund(models.Model):
    """Money given back for a paid order, whole or some of its lines (orders/refunds.py), with
    the staff member's reason; also in the audit trail."""

    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="refunds", verbose_name=_("order")
    )
    amount = models.BigIntegerField(help_text=_("In cents."), verbose_name=_("amount"))
    reason = models.CharField(max_length=REFUND_REASON_MAX_LENGTH, verbose_name=_("reason"))
    # Order line id -> units refunded by this refund.
    lines = models.JSONField(verbose_name=_("lines"))
    coupon_returned = models.BooleanField(default=False, verbose_name=_("coupon returned"))
    refunded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("refunded by"),
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        db_table = "order_refunds"
        verbose_name = _("refund")
        verbose_name_plural = _("refunds")
        ordering = ["id"]

    def __str__(self) -> str:
        return _("Refund #%(id)s of order #%(order)s") % {"id": self.pk, "order": self.order_id}
