"""Every table of the coupons app, a module each; Django finds them here."""

from coupons.models.auto_issue import AutoIssueTask
from coupons.models.campaigns import Campaign
from coupons.models.counter_epoch import CounterEpoch
from coupons.models.published_terms import PublishedTermsVersion
from coupons.models.single_use_codes import SingleUseCode
from coupons.models.templates import CouponTemplate, JSONArrayLength, UseWindow
from coupons.models.user_coupons import UserCoupon, UserCouponQuerySet

__all__ = [
    "AutoIssueTask",
    "Campaign",
    "CounterEpoch",
    "CouponTemplate",
    "JSONArrayLength",  # named by migration 0003's check constraint
    "PublishedTermsVersion",
    "SingleUseCode",
    "UseWindow",
    "UserCoupon",
    "UserCouponQuerySet",
]
