"""A template's own admin pages beside its change page: the CSV of its coupons (a staff job,
SPEC section 34), "grant to users" and "grant to the users of a file" (SPEC sections 13, 17,
34), generating single-use codes (count and prefix;
coupons.manage_codes, asked here and by the service, which records the action) and the record
of its claims and uses (领取/使用记录), searchable by user and order number, a page at a time
(SPEC section 23)."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from backoffice import reports
from backoffice.coupon_admin import grants
from backoffice.coupon_admin.display import COUPON_STATUS_LABELS, local_datetime, shown_status
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from backoffice.staff_jobs.errors import StaffJobBusy
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.starting import staff_job_start
from core import clock
from core.limits import is_id_text
from coupons import selectors
from coupons.coupon_status import CouponStatus
from coupons.errors import TemplateInvalid
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import (
    MAX_SINGLE_USE_CODES_PER_REQUEST,
    SINGLE_USE_CODE_PREFIX_MAX_LENGTH,
)
from coupons.services import codes

RECORDS_PER_PAGE = 50
# The service's field names, as the codes form calls them.
FORM_FIELDS = {"count": "count", "prefix": "code_prefix"}


# What becomes of the template after codes are generated or imported: the staff member's
# explicit choice (SPEC section 25).
REACH_CHOICES = [
    (
        "keep",
        gettext_lazy(
            "Keep the template as it is: it stays in the shop (claimable by id and by "
            "its shared code, if public), and the codes are one more way in"
        ),
    ),
    (
        "codes_only",
        gettext_lazy(
            "Codes only: the template leaves the shop; from now on only its single-use "
            "codes and grants issue it"
        ),
    ),
]


class SingleUseCodesForm(forms.Form):
    count = forms.IntegerField(
        label=gettext_lazy("how many codes"),
        min_value=1,
        max_value=MAX_SINGLE_USE_CODES_PER_REQUEST,
    )
    reach = forms.ChoiceField(
        label=gettext_lazy("after these codes"), widget=forms.RadioSelect, choices=REACH_CHOICES
    )
    code_prefix = forms.CharField(  # not "prefix": a form's own attribute
        label=gettext_lazy("prefix"),
        required=False,
        max_length=SINGLE_USE_CODE_PREFIX_MAX_LENGTH,
        help_text=gettext_lazy(
            "Optional: up to 8 letters A-Z and digits put before each code and a dash, e.g. "
            "618 makes codes that start 618-."
        ),
    )


SEARCHES = [
    ("user", gettext_lazy("user: a username, a part of one, or a user id")),
    ("order", gettext_lazy("order number")),
]


class RecordsFilterForm(forms.Form):
    """The records page's search and filters; each search says what it matches."""

    q = forms.CharField(label=gettext_lazy("search"), required=False, max_length=150)
    by = forms.ChoiceField(label=gettext_lazy("search in"), required=False, choices=SEARCHES)
    status = forms.ChoiceField(
        label=gettext_lazy("use status"),
        required=False,
        choices=[("", gettext_lazy("all"))]
        + [(status.value, COUPON_STATUS_LABELS[status.value]) for status in CouponStatus],
    )
    source = forms.ChoiceField(
        label=gettext_lazy("source"),
        required=False,
        choices=[("", gettext_lazy("all")), *UserCoupon.Source.choices],
    )

    def __init__(self, *args, show_orders: bool, **kwargs):
        super().__init__(*args, **kwargs)
        if not show_orders:  # an order number is searched only by who may see orders
            by = self.fields["by"]
            assert isinstance(by, forms.ChoiceField)
            by.choices = SEARCHES[:1]


def _without_page(query) -> str:
    """The page's query string without its page number, for the pagination links."""
    kept = query.copy()
    kept.pop("page", None)
    return kept.urlencode()


class TemplatePagesAdmin(admin.ModelAdmin):
    """The codes and records pages of CouponTemplateAdmin (backoffice/coupon_admin/templates.py),
    which builds on this."""

    def get_urls(self):
        site = self.admin_site
        return [
            path(
                "<path:object_id>/records/export/",
                site.admin_view(self.export_records_view),
                name="coupons_coupontemplate_export",
            ),
            path(
                "<path:object_id>/grant/",
                site.admin_view(self.grant_view),
                name="coupons_coupontemplate_grant",
            ),
            path(
                "<path:object_id>/grant/file/",
                site.admin_view(self.grant_file_view),
                name="coupons_coupontemplate_grant_file",
            ),
            path(
                "<path:object_id>/codes/",
                site.admin_view(self.codes_view),
                name="coupons_coupontemplate_codes",
            ),
            path(
                "<path:object_id>/records/",
                site.admin_view(self.records_view),
                name="coupons_coupontemplate_records",
            ),
            *super().get_urls(),
        ]

    def page_template(self, request, object_id: str) -> CouponTemplate:
        template = self.get_object(request, object_id)
        if template is None:
            raise Http404(_("No such coupon template."))
        return template

    def page_context(self, request, template: CouponTemplate, title: str) -> dict:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": template.name,
            "opts": CouponTemplate._meta,
            "original": template,
            "template": template,
        }

    def has_grant_permission(self, request) -> bool:
        return grants.may_grant(request)

    def has_export_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.COUPONS_EXPORT)

    def grant_view(self, request, object_id: str):
        """ "Grant to users" from the template's page: the list action's page and service
        (backoffice/coupon_admin/grants.py) for this one template, then back to the template."""
        template = self.page_template(request, object_id)
        if not self.has_grant_permission(request):
            raise PermissionDenied
        answer = grants.grant_to_users(self, request, CouponTemplate.objects.filter(pk=template.pk))
        if answer is None:  # granted; the outcome is in the page's messages
            return redirect("admin:coupons_coupontemplate_change", template.pk)
        return answer

    def grant_file_view(self, request, object_id: str):
        """A grant to the users a file lists, as a staff job: one of the template at a time."""
        template = self.page_template(request, object_id)
        if not self.has_grant_permission(request):
            raise PermissionDenied
        form = grants.GrantFileForm(request.POST or None, request.FILES or None)
        if form.is_valid():
            try:
                job = staff_job_start(
                    kind=StaffJob.Kind.GRANT_FILE,
                    started_by=request.user,
                    template=template,
                    options={"reason": form.cleaned_data["reason"]},
                    upload=form.cleaned_data["file"],
                )
            except StaffJobBusy as busy:
                form.add_error(None, str(busy.detail))
            else:
                return redirect("admin:staff_jobs_staffjob_change", job.pk)
        context = {
            **self.page_context(request, template, _("Grant to the users of a file")),
            "form": form,
            "back_url": reverse("admin:coupons_coupontemplate_change", args=[template.pk]),
        }
        return TemplateResponse(request, "admin/coupons/coupontemplate/grant_file.html", context)

    def export_records_view(self, request, object_id: str):
        """Every coupon of the template as CSV (its claims and uses), written by a worker and
        offered on the job's page; POST only, as it starts work."""
        template = self.page_template(request, object_id)
        if not self.has_export_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return redirect("admin:coupons_coupontemplate_change", template.pk)
        job = staff_job_start(
            kind=StaffJob.Kind.RECORDS_EXPORT, started_by=request.user, template=template
        )
        return redirect("admin:staff_jobs_staffjob_change", job.pk)

    def has_manage_codes_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.CODES_CREATE)

    def codes_view(self, request, object_id: str):
        template = self.page_template(request, object_id)
        if not self.has_manage_codes_permission(request):
            raise PermissionDenied
        form = SingleUseCodesForm(request.POST if request.method == "POST" else None)
        if template.has_single_use_codes:  # nothing to choose: it stays codes-only
            form.fields["reach"].required = False
            form.fields["reach"].widget = forms.HiddenInput()
        if form.is_valid():
            try:
                created = codes.single_use_codes_create(
                    template_id=template.pk,
                    count=form.cleaned_data["count"],
                    prefix=form.cleaned_data["code_prefix"],
                    codes_only=form.cleaned_data["reach"] == "codes_only",
                    audit=staff_audit(request.user, StaffAction.CODES_CREATE),
                )
            except TemplateInvalid as error:  # the service's rules, on the form's fields
                for field, problems in (error.fields or {}).items():
                    form.add_error(FORM_FIELDS.get(field), problems)
                if not error.fields:
                    form.add_error(None, str(error.detail))
            else:
                self.message_user(
                    request,
                    ngettext(
                        "%(count)d single-use code created.",
                        "%(count)d single-use codes created.",
                        created,
                    )
                    % {"count": created},
                    messages.SUCCESS,
                )
                return redirect("admin:coupons_coupontemplate_change", template.pk)
        context = {
            **self.page_context(request, template, _("Generate single-use codes")),
            "form": form,
            "code_counts": selectors.single_use_code_counts(template_id=template.pk),
        }
        return TemplateResponse(request, "admin/coupons/coupontemplate/codes.html", context)

    def has_records_permission(self, request) -> bool:
        """The records page lists who holds the template's coupons: it asks for the view
        permissions of the template and of user coupons (the orders column, of orders too)."""
        return self.has_view_permission(request) and request.user.has_perm(
            "coupons.view_usercoupon"
        )

    def records_view(self, request, object_id: str):
        template = self.page_template(request, object_id)
        if not self.has_records_permission(request):
            raise PermissionDenied
        show_orders = request.user.has_perm("orders.view_order")
        asked = RecordsFilterForm(request.GET or None, show_orders=show_orders)
        chosen = asked.cleaned_data if asked.is_valid() else {}
        search, by = chosen.get("q", ""), chosen.get("by") or "user"
        order_coupons = None
        if search and by == "order":  # an order number: its coupon, if it is ours
            order_coupons = []
            if is_id_text(search):
                found = reports.orders_using_coupons(
                    template_id=template.pk, order_ids=[int(search)], limit=1
                )
                order_coupons = [order.coupon_id for order in found]
        now = clock.now()
        coupons = selectors.template_records(
            template_id=template.pk,
            user=search if by == "user" else "",
            coupon_ids=order_coupons,
            status=CouponStatus(chosen["status"]) if chosen.get("status") else None,
            source=chosen.get("source") or None,
            now=now,
        )
        page = Paginator(coupons, RECORDS_PER_PAGE).get_page(request.GET.get("page"))
        ids = [coupon.pk for coupon in page]
        orders: dict[int, list] = {}
        for order in (
            reports.orders_using_coupons(coupon_ids=ids, limit=len(ids) * 3)
            if ids and show_orders
            else []
        ):
            orders.setdefault(order.coupon_id, []).append(order)
        paid = reports.coupons_paid_for(ids)
        rows = [
            {
                "coupon": coupon,
                "source": coupon.get_source_display(),
                "status": COUPON_STATUS_LABELS[shown_status(coupon, now=now, paid=paid)],
                "claimed_at": local_datetime(coupon.created_at),
                "used_at": local_datetime(coupon.used_at),
                "orders": orders.get(coupon.pk, []),
            }
            for coupon in page
        ]
        context = {
            **self.page_context(request, template, _("Claims and uses")),
            "rows": rows,
            "page_obj": page,
            "filters": asked if asked.is_bound else RecordsFilterForm(show_orders=show_orders),
            "kept_query": _without_page(request.GET),
            "show_orders": show_orders,
            "back_url": reverse("admin:coupons_coupontemplate_change", args=[template.pk]),
        }
        return TemplateResponse(request, "admin/coupons/coupontemplate/records.html", context)
