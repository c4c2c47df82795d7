"""Permissions as an operator reads them. Django stores permission names in English in the
database ("Can add coupon template"); the user and group pages list them in the admin's
language instead, and leave out the apps an operator has no use for."""

from django.apps import apps
from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin
from django.contrib.auth.models import Group, Permission
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.account_admin.staff_access import StaffGroupGuard
from backoffice.audit_admin import StaffHistoryAdmin

# Plumbing whose permissions nobody grants by hand (token_blacklist keeps the refresh tokens,
# accounts the token generations). "core" is the api package's idempotency records (its
# AppConfig keeps that label).
HIDDEN_APPS = ("token_blacklist", "accounts", "sessions", "contenttypes", "core")
# The shopper list's version row (coupons/shopper_list.py) is plumbing inside an operator's app.
HIDDEN_MODELS = ("publishedtermsversion",)

DEFAULT_ACTIONS = {
    "add": gettext_lazy("Can add %(model)s"),
    "change": gettext_lazy("Can change %(model)s"),
    "delete": gettext_lazy("Can delete %(model)s"),
    "view": gettext_lazy("Can view %(model)s"),
}

# The project's own permissions (Meta.permissions), for makemessages: the database keeps the
# English name, this is its translation.
CUSTOM_NAMES = {
    "Can grant coupons": gettext_lazy("Can grant coupons"),
    "Can export coupons": gettext_lazy("Can export coupons"),
    "Can pause and resume coupons": gettext_lazy("Can pause and resume coupons"),
    "Can create and list single-use codes": gettext_lazy("Can create and list single-use codes"),
    "Can adjust stock": gettext_lazy("Can adjust stock"),
    "Can cancel orders": gettext_lazy("Can cancel orders"),
    "Can refund orders": gettext_lazy("Can refund orders"),
    "Can manage staff accounts, groups and permissions": gettext_lazy(
        "Can manage staff accounts, groups and permissions"
    ),
}


def permission_label(permission: Permission) -> str:
    """ "coupons | coupon template | Can grant coupons", each part in the admin's language."""
    content_type = permission.content_type
    model = content_type.model_class()
    model_name = model._meta.verbose_name if model is not None else content_type.model
    try:
        app_name = apps.get_app_config(content_type.app_label).verbose_name
    except LookupError:
        app_name = content_type.app_label
    action, _separator, _rest = permission.codename.partition("_")
    if action in DEFAULT_ACTIONS and permission.name not in CUSTOM_NAMES:
        name = DEFAULT_ACTIONS[action] % {"model": model_name}
    else:
        name = _(permission.name)
    return f"{app_name} | {model_name} | {name}"


def operator_permissions(queryset: QuerySet[Permission]) -> QuerySet[Permission]:
    shown = ~Q(content_type__app_label__in=HIDDEN_APPS) | Q(
        content_type__app_label="accounts", codename="manage_staff"
    )
    return queryset.filter(shown).exclude(
        content_type__app_label="coupons", content_type__model__in=HIDDEN_MODELS
    )


class PermissionLabelsMixin:
    """For a ModelAdmin with a `permissions` or `user_permissions` many-to-many."""

    def formfield_for_manytomany(self, db_field, request=None, **kwargs):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name in ("permissions", "user_permissions"):
            field.queryset = operator_permissions(field.queryset)
            field.label_from_instance = permission_label
        return field


if admin.site.is_registered(Group):
    admin.site.unregister(Group)


@admin.register(Group)
class GroupWithLabelsAdmin(StaffHistoryAdmin, StaffGroupGuard, PermissionLabelsMixin, GroupAdmin):
    pass
