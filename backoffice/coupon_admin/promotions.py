"""The admin's promotion actions (SPEC section 18): pause and resume templates, and export
their single-use codes as CSV (a staff job). Each action checks the permissions of
backoffice/staff_actions.py (Django hides an action from a user without them and refuses it if
posted anyway): pause and resume need coupons.pause_coupons, the codes CSV coupons.manage_codes
and coupons.export_coupons. The services ask again and record each action."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy, ngettext

from backoffice.action_buttons import ButtonLook, looks
from backoffice.coupon_admin.spreadsheets import export_started
from backoffice.staff_actions import StaffAction, staff_audit
from backoffice.staff_jobs.models import StaffJob
from coupons.models import CouponTemplate
from coupons.services import templates


@admin.action(description=gettext_lazy("Pause: issue nothing until resumed"), permissions=["pause"])
@looks(ButtonLook.STOP)
def pause_templates(modeladmin, request, queryset: QuerySet[CouponTemplate]) -> None:
    # Counted as changed: the queryset, filtered by state, would count afresh after the change.
    count = templates.coupon_templates_paused_set(
        template_ids=list(queryset.values_list("pk", flat=True)),
        paused=True,
        audit=staff_audit(request.user, StaffAction.TEMPLATE_PAUSE),
    )
    modeladmin.message_user(
        request,
        ngettext("%(count)d template paused.", "%(count)d templates paused.", count)
        % {"count": count},
        messages.SUCCESS,
    )


@admin.action(description=gettext_lazy("Resume issuing"), permissions=["pause"])
@looks(ButtonLook.RESUME)
def resume_templates(modeladmin, request, queryset: QuerySet[CouponTemplate]) -> None:
    count = templates.coupon_templates_paused_set(
        template_ids=list(queryset.values_list("pk", flat=True)),
        paused=False,
        audit=staff_audit(request.user, StaffAction.TEMPLATE_RESUME),
    )
    modeladmin.message_user(
        request,
        ngettext("%(count)d template resumed.", "%(count)d templates resumed.", count)
        % {"count": count},
        messages.SUCCESS,
    )


@admin.action(
    description=gettext_lazy("Export single-use codes (CSV)"), permissions=["export_codes"]
)
@looks(ButtonLook.DOWNLOAD)
def export_single_use_codes(modeladmin, request, queryset: QuerySet[CouponTemplate]):
    """A staff job, as the XLSX one (backoffice/coupon_admin/spreadsheets.py)."""
    kind, action = StaffJob.Kind.CODES_EXPORT, StaffAction.CODES_EXPORT
    return export_started(request, queryset, kind, action, format="csv")
