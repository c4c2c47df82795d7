"""The admin's promotion actions (SPEC section 18): pause and resume templates, and export
their single-use codes as CSV. Each action checks the permissions of backoffice/staff_actions.py
(Django hides an action from a user without them and refuses it if posted anyway): pause and
resume need coupons.pause_coupons, the codes CSV coupons.manage_codes and
coupons.export_coupons. The services ask again and record each action."""

import csv
from collections.abc import Iterable, Iterator

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice.action_buttons import ButtonLook, looks
from backoffice.coupon_admin.template_report import in_language
from backoffice.staff_actions import StaffAction, staff_audit
from core.csv_cells import csv_row
from core.read_routing import replica_lines
from coupons.models import CouponTemplate
from coupons.services import templates
from coupons.single_use_codes import SingleUseCode

CODES_CSV_BATCH_SIZE = 2_000
UTF8_BOM = "\ufeff"  # so that Excel opens the file as UTF-8 (template names in Chinese)


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
def export_single_use_codes(
    modeladmin, request, queryset: QuerySet[CouponTemplate]
) -> StreamingHttpResponse:
    audit = staff_audit(request.user, StaffAction.CODES_EXPORT)
    audit.check()
    template_ids = sorted(queryset.values_list("pk", flat=True))
    # A download has no service: it is recorded here, per template, with how many codes.
    for template in CouponTemplate.objects.filter(pk__in=template_ids):
        count = SingleUseCode.objects.filter(template_id=template.pk).count()
        audit.record(template, {"count": count})
    # Streamed after the view returns: the lines keep the language of this request.
    lines = in_language(codes_csv_lines(template_ids), translation.get_language())
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="single-use-codes.csv"'
    return response


def codes_csv_lines(template_ids: Iterable[int]) -> Iterator[str]:
    """The templates' single-use codes as CSV lines (a BOM first, headers in the admin's
    language, local times without microseconds), read in keyset batches, on the replica
    when there is one (core/read_routing.py)."""
    return replica_lines(_codes_csv_lines(template_ids))


def _codes_csv_lines(template_ids: Iterable[int]) -> Iterator[str]:

    class Line:  # csv.writer wants a file; this one hands back the line just written
        def write(self, text: str) -> str:
            return text

    writer = csv.writer(Line())
    header = [
        _("template id"),
        _("template"),
        _("code"),
        _("used by"),
        _("used at"),
        _("created at"),
    ]
    yield UTF8_BOM + writer.writerow(header)
    for template_id in template_ids:
        name = CouponTemplate.objects.values_list("name", flat=True).get(pk=template_id)
        last_id = 0
        while True:
            batch = list(
                SingleUseCode.objects.filter(template_id=template_id, pk__gt=last_id)
                .select_related("used_by")
                .order_by("pk")[:CODES_CSV_BATCH_SIZE]
            )
            if not batch:
                break
            for code in batch:
                row = [
                    template_id,
                    name,
                    code.code,
                    code.used_by.get_username() if code.used_by else "",
                    _local(code.used_at),
                    _local(code.created_at),
                ]
                # Codes never start with a formula character; names and usernames may.
                yield writer.writerow(csv_row(row))
            last_id = batch[-1].pk


def _local(moment) -> str:
    if moment is None:
        return ""
    return timezone.localtime(moment).replace(microsecond=0, tzinfo=None).isoformat(sep=" ")
