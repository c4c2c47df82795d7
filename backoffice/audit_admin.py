"""The admin's log page (issue 21): every staff action from any door, read-only, searchable by
user, object and action, filtered by action and date. Its rows are Django's LogEntry, the
same rows each object's history shows (backoffice/staff_actions.py writes them)."""

from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.db.models import Q, QuerySet
from django.utils.translation import gettext_lazy

from backoffice.audit_messages import ACTION_LABELS, audit_message
from backoffice.staff_actions import MESSAGE_PREFIX, StaffAction
from core.admin_fields import ReadOnlyAdmin

OTHER_CHANGES = "other"


def action_prefix(action: StaffAction) -> str:
    return f'{MESSAGE_PREFIX}{action.value}"'


class StaffHistoryAdmin(admin.ModelAdmin):
    """An object's history with each recorded staff action in words and amounts."""

    object_history_template = "admin/staff_object_history.html"


class ActionFilter(admin.SimpleListFilter):
    title = gettext_lazy("action")
    parameter_name = "staff_action"

    def lookups(self, request, model_admin):
        return [
            *((action.value, label) for action, label in ACTION_LABELS.items()),
            (OTHER_CHANGES, gettext_lazy("Other changes in the admin")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if value == OTHER_CHANGES:
            return queryset.exclude(change_message__startswith=MESSAGE_PREFIX)
        if value not in StaffAction._value2member_map_:
            return queryset.none()
        return queryset.filter(change_message__startswith=action_prefix(StaffAction(value)))


@admin.register(LogEntry)
class StaffLogAdmin(ReadOnlyAdmin):
    list_display = ["action_time", "user", "object_type", "object_shown", "message"]
    list_display_links = None
    list_filter = [
        ActionFilter,
        ("action_time", admin.DateFieldListFilter),
        ("content_type", admin.RelatedOnlyFieldListFilter),
    ]
    list_select_related = ["user", "content_type"]
    search_fields = ["user__username", "object_repr", "=object_id", "change_message"]
    date_hierarchy = "action_time"
    ordering = ["-action_time", "-id"]
    list_per_page = 50

    @admin.display(description=gettext_lazy("object type"))
    def object_type(self, entry: LogEntry) -> str:
        model = entry.content_type.model_class() if entry.content_type is not None else None
        return str(model._meta.verbose_name) if model is not None else "–"

    @admin.display(description=gettext_lazy("object"), ordering="object_repr")
    def object_shown(self, entry: LogEntry) -> str:
        if entry.object_id is None:  # an action on many objects at once
            return entry.object_repr
        return f"{entry.object_repr} (#{entry.object_id})"

    @admin.display(description=gettext_lazy("what was done"))
    def message(self, entry: LogEntry) -> str:
        return audit_message(entry)

    def get_search_results(self, request, queryset: QuerySet[LogEntry], search_term: str):
        """Also by an action's name as the page shows it ("调整库存", "adjust stock")."""
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip().casefold()
        if not term:
            return found, may_have_duplicates
        named = Q()
        for action, label in ACTION_LABELS.items():
            if term in str(label).casefold():
                named |= Q(change_message__startswith=action_prefix(action))
        if named:
            found = found | queryset.filter(named)
        return found, may_have_duplicates
