"""自动发券记录: every coupon an event earned and how its issuing went, read-only (the tasks
are the events' own record; staff change how a template is issued on the template)."""

from django.contrib import admin
from django.utils.translation import gettext_lazy

from backoffice.coupon_admin.display import local_datetime
from core.admin_fields import ReadOnlyAdmin
from coupons.models.auto_issue import AutoIssueTask


@admin.register(AutoIssueTask)
class AutoIssueTaskAdmin(ReadOnlyAdmin):
    list_display = [
        "number",
        "template",
        "user",
        "event",
        "order_shown",
        "state",
        "attempts",
        "last_error",
        "coupon_shown",
        "created",
    ]
    list_filter = ["event", "state"]
    search_fields = ["=order_id", "=user__id", "user__username", "template__name"]
    list_select_related = ["template", "user"]
    ordering = ["-pk"]

    @admin.display(description=gettext_lazy("number"), ordering="pk")
    def number(self, task: AutoIssueTask) -> str:
        return f"#{task.pk}"

    @admin.display(description=gettext_lazy("order"), ordering="order_id")
    def order_shown(self, task: AutoIssueTask) -> str:
        return f"#{task.order_id}" if task.order_id else "–"

    @admin.display(description=gettext_lazy("created at"), ordering="created_at")
    def created(self, task: AutoIssueTask) -> str:
        return local_datetime(task.created_at)

    @admin.display(description=gettext_lazy("coupon"), ordering="coupon_id")
    def coupon_shown(self, task: AutoIssueTask) -> str:
        return f"#{task.coupon_id}" if task.coupon_id else "–"
