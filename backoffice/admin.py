"""What Django's admin autodiscovery imports for the back office: each module that registers
ModelAdmins. Nothing is re-exported."""

from backoffice import (  # noqa: F401  (registration)
    account_admin,  # users, groups
    audit_admin,  # the log page of staff actions
    coupon_admin,  # templates, coupons, campaigns, automatic issues
)
from backoffice.order_admin import orders  # noqa: F401  (products, categories, orders)
