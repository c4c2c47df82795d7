"""The coupon admin, one module per idea. Importing the modules that register ModelAdmins here
is what Django's admin autodiscovery needs; nothing is re-exported."""

from coupons.admin import (  # noqa: F401  (registration)
    permissions,
    templates,
    user_coupons,
    users,
)
from coupons.auto_issue import admin as auto_issue_admin  # noqa: F401  (registration)
from coupons.campaigns import admin as campaigns_admin  # noqa: F401  (registration)
