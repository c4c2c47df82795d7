"""Staff actions: the one table of which Django permissions each staff operation needs, asked
by every door (the Django admin, the admin API, the grant command) and once more by the service
through the audit the door passes it; and the one audit trail, a `django.contrib.admin`
LogEntry per action, written in the action's own transaction, so each door is recorded exactly
once (decisions 0600 and 1017). A service called without an audit (seed data, jobs, tests) is
not a staff action: nothing is checked or recorded (core/staff_audit.py's NOT_STAFF)."""

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Model
from rest_framework.permissions import IsAdminUser

from backoffice.errors import StaffActionRefused
from core.staff_audit import StaffAudit


class Actor(Protocol):
    """The staff member acting (Django's user, or any with these)."""

    @property
    def pk(self) -> Any: ...

    @property
    def is_active(self) -> bool: ...

    @property
    def is_staff(self) -> bool: ...

    def has_perms(self, perm_list: Any, obj: Any = None) -> bool: ...


class StaffAction(StrEnum):
    TEMPLATE_VIEW = "template_view"
    TEMPLATE_PUBLISH = "template_publish"
    TEMPLATE_EDIT = "template_edit"
    TEMPLATE_DELETE = "template_delete"
    TEMPLATE_PAUSE = "template_pause"
    TEMPLATE_RESUME = "template_resume"
    COUPONS_GRANT = "coupons_grant"
    COUPONS_EXPORT = "coupons_export"
    TEMPLATES_EXPORT = "templates_export"
    CODES_CREATE = "codes_create"
    CODES_IMPORT = "codes_import"
    CODES_LIST = "codes_list"
    CODES_EXPORT = "codes_export"
    CAMPAIGN_VIEW = "campaign_view"
    CAMPAIGN_CREATE = "campaign_create"
    CAMPAIGN_EDIT = "campaign_edit"
    STOCK_ADJUST = "stock_adjust"
    ORDER_CANCEL = "order_cancel"
    ORDER_REFUND = "order_refund"
    STAFF_MANAGE = "staff_manage"


VIEW_TEMPLATES = "coupons.view_coupontemplate"
PAUSE_COUPONS = "coupons.pause_coupons"
MANAGE_CODES = "coupons.manage_codes"
GRANT_COUPONS = "coupons.grant_coupons"
EXPORT_COUPONS = "coupons.export_coupons"
ADJUST_STOCK = "orders.adjust_stock"
CANCEL_ORDER = "orders.cancel_order"
REFUND_ORDER = "orders.refund_order"
MANAGE_STAFF = "accounts.manage_staff"

# The one place that says which operation needs which permissions (all of them). Codes are
# bearer secrets: downloading them is both managing codes and an export.
PERMISSIONS_NEEDED: dict[StaffAction, tuple[str, ...]] = {
    StaffAction.TEMPLATE_VIEW: (VIEW_TEMPLATES,),
    StaffAction.TEMPLATE_PUBLISH: ("coupons.add_coupontemplate",),
    StaffAction.TEMPLATE_EDIT: ("coupons.change_coupontemplate",),
    StaffAction.TEMPLATE_DELETE: ("coupons.delete_coupontemplate",),
    StaffAction.TEMPLATE_PAUSE: (PAUSE_COUPONS,),
    StaffAction.TEMPLATE_RESUME: (PAUSE_COUPONS,),
    StaffAction.COUPONS_GRANT: (GRANT_COUPONS,),
    StaffAction.COUPONS_EXPORT: (EXPORT_COUPONS,),
    StaffAction.TEMPLATES_EXPORT: (VIEW_TEMPLATES, EXPORT_COUPONS),
    StaffAction.CODES_CREATE: (MANAGE_CODES,),
    StaffAction.CODES_IMPORT: (MANAGE_CODES,),
    StaffAction.CODES_LIST: (MANAGE_CODES,),
    StaffAction.CODES_EXPORT: (MANAGE_CODES, EXPORT_COUPONS),
    StaffAction.CAMPAIGN_VIEW: ("coupons.view_campaign",),
    StaffAction.CAMPAIGN_CREATE: ("coupons.add_campaign",),
    StaffAction.CAMPAIGN_EDIT: ("coupons.change_campaign",),
    StaffAction.STOCK_ADJUST: (ADJUST_STOCK,),
    StaffAction.ORDER_CANCEL: (CANCEL_ORDER,),
    StaffAction.ORDER_REFUND: (REFUND_ORDER,),
    # Staff accounts (is_staff, is_superuser, groups, permissions, any change to a staff
    # member) and groups: on top of Django's "change user" / "change group".
    StaffAction.STAFF_MANAGE: (MANAGE_STAFF,),
}

# Django's admin lets whoever may change a model view it too; the table says the same.
ALSO_ENOUGH: dict[StaffAction, tuple[str, ...]] = {
    StaffAction.TEMPLATE_VIEW: ("coupons.change_coupontemplate",),
    StaffAction.CAMPAIGN_VIEW: ("coupons.change_campaign",),
}

# Reads are not recorded; every change and every download is.
NOT_RECORDED = frozenset(
    {StaffAction.TEMPLATE_VIEW, StaffAction.CODES_LIST, StaffAction.CAMPAIGN_VIEW}
)
ACTION_FLAGS = {
    StaffAction.TEMPLATE_PUBLISH: ADDITION,
    StaffAction.CAMPAIGN_CREATE: ADDITION,
    StaffAction.TEMPLATE_DELETE: DELETION,
}
# A recorded action's change_message starts with this, then the action's value and '"'.
MESSAGE_PREFIX = '{"staff_action": "'


def staff_may(user: Actor | None, action: StaffAction) -> bool:
    """Whether `user` is active staff holding every permission `action` needs, or the one
    that is also enough (a superuser holds all of them)."""
    if user is None or not (user.is_active and user.is_staff):
        return False
    return user.has_perms(PERMISSIONS_NEEDED[action]) or (
        action in ALSO_ENOUGH and user.has_perms(ALSO_ENOUGH[action])
    )


class StaffActionAudit:
    """`actor` doing `action`, checked and recorded as the service that does it asks
    (core/staff_audit.py): each door builds one for each service call."""

    def __init__(self, actor: Actor, action: StaffAction, *, entry_ids: Sequence[int] = ()) -> None:
        """`entry_ids`: the entries an earlier run of the same action wrote (a staff job's run
        whose worker was killed), which this one brings up to date instead of adding others."""
        self.actor = actor
        self.action = action
        self._entries: dict[tuple[int | None, str | None], LogEntry] = {
            (entry.content_type_id, entry.object_id): entry
            for entry in LogEntry.objects.filter(pk__in=entry_ids)
        }

    def check(self) -> None:
        """Raise StaffActionRefused (403) unless the actor may do the action. Changes
        nothing."""
        if not staff_may(self.actor, self.action):
            raise StaffActionRefused()

    def record(self, target: Model | type[Model], amounts: Mapping[str, Any] | None = None) -> None:
        """Record the action on `target` with its amounts as one LogEntry (who, when, what, how
        much), shown in the object's admin history and the admin's log page; a later record of
        the same target rewrites that entry's amounts. Call it inside the action's transaction
        (before a delete: it reads the target's pk). An action on many objects at once (an
        export of the template list) names their model: one entry, on no object."""
        if self.action in NOT_RECORDED:
            return
        one = isinstance(target, Model)
        content_type = ContentType.objects.get_for_model(target)
        key = (content_type.pk, str(target.pk) if one else None)
        message = json.dumps(
            {"staff_action": self.action.value, "amounts": dict(amounts or {})},
            cls=DjangoJSONEncoder,
            ensure_ascii=False,
        )
        entry = self._entries.get(key)
        if entry is not None:
            entry.change_message = message
            entry.save(update_fields=["change_message"])
            return
        self._entries[key] = LogEntry.objects.create(
            user_id=self.actor.pk,
            content_type=content_type,
            object_id=key[1],
            object_repr=str(target)[:200] if one else str(target._meta.verbose_name_plural),
            action_flag=ACTION_FLAGS.get(self.action, CHANGE),
            change_message=message,
        )

    def entry_ids(self) -> list[int]:
        """The entries this audit wrote or continued."""
        return sorted(entry.pk for entry in self._entries.values())


def staff_audit(actor: Actor, action: StaffAction) -> StaffAudit:
    """The audit a door passes to the service it calls for `actor`."""
    return StaffActionAudit(actor, action)


def recorded_action(entry: LogEntry) -> tuple[StaffAction, dict[str, Any]] | None:
    """The action and amounts a LogEntry records, or None for the admin's own entries."""
    if not entry.change_message.startswith(MESSAGE_PREFIX):
        return None
    try:
        data = json.loads(entry.change_message)
        return StaffAction(data["staff_action"]), dict(data["amounts"])
    except (ValueError, KeyError, TypeError):
        return None


class StaffActionPermission(IsAdminUser):
    """DRF's side of the table (an IsAdminUser, so the schema documents its 403): active
    staff holding the permissions of the staff action of the viewset action the request's
    method is routed to, named on the viewset as `staff_actions = {"list":
    StaffAction.TEMPLATE_VIEW, ...}`; HEAD and OPTIONS ask GET's. A method the route does not
    handle passes, so that it is answered 405; one it handles without a staff action listed
    is refused."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated and user.is_staff):
            return False
        method = "get" if request.method in ("HEAD", "OPTIONS") else request.method.lower()
        routed_to = view.action_map.get(method)
        if routed_to is None:
            return True
        action = getattr(view, "staff_actions", {}).get(routed_to)
        return action is not None and staff_may(user, action)
