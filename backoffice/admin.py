"""What Django's admin autodiscovery imports for the back office: each module that registers
ModelAdmins. Nothing is re-exported."""

from backoffice import (
    audit_admin,  # noqa: F401  (the log page of staff actions)
    coupon_admin,  # noqa: F401  (templates, coupons, users, groups, campaigns)
)
from backoffice.order_admin import orders  # noqa: F401  (products, categories, orders)
