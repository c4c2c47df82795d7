"""The coupon admin, one module per idea. Importing the modules that register ModelAdmins here
is what Django's admin autodiscovery needs; nothing is re-exported."""

from backoffice.coupon_admin import (  # noqa: F401  (registration)
    automatic_issues,
    campaigns,
    templates,
    user_coupons,
)
