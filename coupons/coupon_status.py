"""A coupon's status as it is read (coupons/models/user_coupons.py stores only unused / used):
the one rule, in SQL and for a coupon in hand."""

from datetime import datetime

from django.db import models
from django.db.models import Q


class CouponStatus(models.TextChoices):
    """A coupon's status as shoppers, orders and the admin see it: the stored status, with an
    unused coupon past its OWN use window (stamped at issue, SPEC section 10) as expired. The
    template's claim window plays no part: it says who may still claim, not who may use."""

    UNUSED = "unused"
    USED = "used"
    EXPIRED = "expired"


def coupon_status_q(status: CouponStatus, *, now: datetime) -> Q:
    """The one writing of the status in SQL; `UserCoupon.status_at` is the same rule for one
    coupon in hand. Both read only the coupon's own columns."""
    match CouponStatus(status):
        case CouponStatus.UNUSED:
            return Q(status=CouponStatus.UNUSED, valid_until__gte=now)
        case CouponStatus.EXPIRED:
            return Q(status=CouponStatus.UNUSED, valid_until__lt=now)
        case CouponStatus.USED:
            return Q(status=CouponStatus.USED)
