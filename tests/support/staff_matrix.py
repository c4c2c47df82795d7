"""What the staff-permission matrix acts on, and everything a refused staff action must leave
as it was (tests/accounts/test_staff_*_matrix.py)."""

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model

from backoffice.staff_actions import MESSAGE_PREFIX, StaffAction
from core import clock
from coupons.models import Campaign, CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import templates
from coupons.services.campaigns import campaign_create
from orders import services
from orders.models import Order, Product
from tests.support.admin_users import EVERY_STAFF_PERMISSION, staff_with
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserFactory

# Who acts in a case: one of the staff permissions alone, every one, or a superuser.
HOLDERS = [*EVERY_STAFF_PERMISSION, "superuser"]


@dataclass(frozen=True)
class World:
    template: CouponTemplate  # open, unclaimed: published, edited, deleted, granted, paused
    paused: CouponTemplate  # for resume
    shopper: object
    product: Product
    order: Order  # awaiting payment
    paid: Order  # paid for: refunded
    campaign: Campaign  # edited


def world() -> World:
    now = clock.now()
    template = CouponTemplateFactory(
        total=10, valid_from=now - timedelta(hours=1), valid_until=now + timedelta(days=2)
    )
    paused = CouponTemplateFactory(total=10)
    templates.coupon_template_pause(template_id=paused.pk)
    shopper = UserFactory(username="shopper")
    product = ProductFactory(stock=10)
    order, paid = (
        services.order_checkout(
            user_id=shopper.pk, items=[{"product_id": product.pk, "quantity": 1}]
        )
        for _ in range(2)
    )
    services.order_pay(user_id=shopper.pk, order_id=paid.pk, amount=paid.pay_amount)
    campaign = campaign_create(
        name="Matrix", starts_at=now, ends_at=now + timedelta(days=1), budget=10_000
    )
    return World(template, paused, shopper, product, order, paid, campaign)


def acting_staff(holder: str, *base: str, **fields):
    """Staff holding `base` and `holder` (a permission), or a superuser."""
    if holder == "superuser":
        return get_user_model().objects.create_superuser("root", password="pass-word-123")
    return staff_with(*dict.fromkeys([*base, holder]), **fields)


def state() -> tuple:
    """Everything a staff action can change, the audit trail included."""
    return (
        list(
            CouponTemplate.objects.order_by("pk").values_list(
                "pk", "name", "total", "paused_at", "has_single_use_codes", "updated_at"
            )
        ),
        UserCoupon.objects.count(),
        SingleUseCode.objects.count(),
        list(Product.objects.order_by("pk").values_list("pk", "stock")),
        list(Order.objects.order_by("pk").values_list("pk", "status")),
        list(Campaign.objects.order_by("pk").values_list("pk", "name", "budget", "updated_at")),
        LogEntry.objects.count(),
    )


def recorded(action: StaffAction, user) -> int:
    """How many entries record `action` by `user`."""
    prefix = f'{MESSAGE_PREFIX}{action.value}"'
    return LogEntry.objects.filter(user=user, change_message__startswith=prefix).count()
