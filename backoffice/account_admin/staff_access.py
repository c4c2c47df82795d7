"""Who may change staff access in the Django admin (StaffAction.STAFF_MANAGE, the permission
accounts.manage_staff on top of Django's own): the user and group admins mix these in.

Without it a staff member may still change shoppers ("Can change user"), but sees a staff
member's account read-only, cannot set is_staff, groups or permissions, and cannot add,
change or delete a group; is_superuser is a superuser's alone. Every change of staff access
(those fields of a user, a group's permissions) is recorded in the audit trail, inside the
transaction the admin's change form runs in."""

from typing import Any

from backoffice.staff_actions import StaffAction, staff_audit, staff_may

STAFF_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")


def may_manage_staff(request) -> bool:
    return staff_may(request.user, StaffAction.STAFF_MANAGE)


def _names(values: Any) -> list[str]:
    return sorted(str(value) for value in values)


def user_access(user) -> dict[str, Any]:
    """What a user's staff access is, as the audit trail records it."""
    if user.pk is None:
        return {"is_staff": False, "is_superuser": False, "groups": [], "user_permissions": []}
    return {
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "groups": _names(user.groups.values_list("name", flat=True)),
        "user_permissions": _names(user.user_permissions.values_list("codename", flat=True)),
    }


def access_changed(request, target, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Record the fields of `target`'s access that changed, with before and after, if any."""
    changed = {
        field: [before[field], after[field]] for field in before if before[field] != after[field]
    }
    if changed:
        staff_audit(request.user, StaffAction.STAFF_MANAGE).record(target, changed)


def holds_access(user) -> bool:
    """Staff, superuser, or holding groups or permissions (a demoted account keeps them)."""
    return (
        user.is_staff or user.is_superuser or user.groups.exists() or user.user_permissions.exists()
    )


class StaffAccountGuard:
    """For the user admin (django.contrib.auth.admin.UserAdmin)."""

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not may_manage_staff(request) or (obj is not None and obj.pk == request.user.pk):
            # Nobody changes their own access: another holder of the permission does.
            fields += [field for field in STAFF_FIELDS if field not in fields]
        elif not request.user.is_superuser and "is_superuser" not in fields:
            fields.append("is_superuser")
        return fields

    def may_change_account(self, request, obj) -> bool:
        """A superuser's account is a superuser's to change (its password too); any account
        with access, a holder of accounts.manage_staff's."""
        if obj is None:
            return True
        if obj.is_superuser and not request.user.is_superuser:
            return False
        return may_manage_staff(request) or not holds_access(obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return self.may_change_account(request, obj) and super().has_change_permission(  # type: ignore[misc]
            request, obj
        )

    def has_delete_permission(self, request, obj=None) -> bool:
        return self.may_change_account(request, obj) and super().has_delete_permission(  # type: ignore[misc]
            request, obj
        )

    def save_model(self, request, obj, form, change) -> None:
        before = user_access(type(obj).objects.get(pk=obj.pk)) if change else user_access(obj)
        request._staff_access_before = before
        super().save_model(request, obj, form, change)  # type: ignore[misc]

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        before = getattr(request, "_staff_access_before", None)
        if before is not None:
            access_changed(request, form.instance, before, user_access(form.instance))


def member_of(request, group) -> bool:
    """Whether the staff member asking belongs to `group`: its permissions are theirs, so
    changing it would change their own access, which nobody does (a superuser's access is
    whole whatever its groups say)."""
    if group is None or group.pk is None or request.user.is_superuser:
        return False
    return request.user.groups.filter(pk=group.pk).exists()


class StaffGroupGuard:
    """For the group admin: groups carry permissions, so they are staff access. A group the
    staff member belongs to is shown read-only to them: another holder of the permission
    changes it."""

    def has_add_permission(self, request) -> bool:
        return may_manage_staff(request) and super().has_add_permission(request)  # type: ignore[misc]

    def has_change_permission(self, request, obj=None) -> bool:
        return (
            may_manage_staff(request)
            and not member_of(request, obj)
            and super().has_change_permission(request, obj)  # type: ignore[misc]
        )

    def has_delete_permission(self, request, obj=None) -> bool:
        return (
            may_manage_staff(request)
            and not member_of(request, obj)
            and super().has_delete_permission(request, obj)  # type: ignore[misc]
        )

    def save_model(self, request, obj, form, change) -> None:
        request._group_permissions_before = (
            _names(obj.permissions.values_list("codename", flat=True)) if change else []
        )
        super().save_model(request, obj, form, change)  # type: ignore[misc]

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        after = _names(form.instance.permissions.values_list("codename", flat=True))
        access_changed(
            request,
            form.instance,
            {"permissions": request._group_permissions_before},
            {"permissions": after},
        )
