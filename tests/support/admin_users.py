"""Staff members with exactly the admin permissions a test names."""

from django.contrib.auth.models import Permission
from django.db.models import Q

from backoffice.staff_actions import PERMISSIONS_NEEDED
from tests.support.factories import UserFactory

# Every permission a staff action needs (backoffice/staff_actions.py): an operator who may do all.
EVERY_STAFF_PERMISSION = tuple(
    sorted({permission for needed in PERMISSIONS_NEEDED.values() for permission in needed})
)

# Everything an operator can look at, and nothing they can change.
VIEW_ONLY = (
    "coupons.view_coupontemplate",
    "coupons.view_usercoupon",
    "orders.view_order",
    "orders.view_product",
    "orders.view_category",
    "auth.view_user",
    "auth.view_group",
)


def staff_with(*permissions: str, **fields):
    """A staff member (not a superuser) holding `permissions` ("app_label.codename")."""
    user = UserFactory(is_staff=True, **fields)
    wanted = Q()
    for permission in permissions:
        app_label, codename = permission.split(".")
        wanted |= Q(content_type__app_label=app_label, codename=codename)
    found = list(Permission.objects.filter(wanted))
    assert len(found) == len(permissions), f"unknown permissions among {permissions}"
    user.user_permissions.set(found)
    return user
