"""User coupons in the admin: read-only, on their own list and inline on a user's page."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy

from backoffice import reports
from backoffice.coupon_admin.display import (
    COUPON_STATUS_LABELS,
    RECENT_ROWS,
    local_datetime,
    reason_text,
    shown_status,
)
from backoffice.coupon_admin.filters import DerivedStatusFilter
from core import clock
from coupons.models import UserCoupon


class ReadOnlyAdminMixin:
    """Coupons change only through claims and orders: the admin shows them, nothing more."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(UserCoupon)
class UserCouponAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "template_link",
        "user_link",
        "source",
        "coupon_status",
        "claimed_at",
        "used",
        "granter",
    ]
    list_filter = [DerivedStatusFilter, "source"]
    search_fields = ["user__username", "template__name", "grant_reason"]
    list_select_related = ["template", "user", "granted_by"]
    readonly_fields = (
        "template_link",
        "user_link",
        "source",
        "coupon_status",
        "claimed_at",
        "used",
        "order_link",
        "reason",
        "granter",
    )
    fields = readonly_fields
    actions = None

    @admin.display(description=gettext_lazy("template"))
    def template_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:coupons_coupontemplate_change", args=[coupon.template_id])
        return format_html('<a href="{}">{}</a>', url, coupon.template.name)

    @admin.display(description=gettext_lazy("user"))
    def user_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:auth_user_change", args=[coupon.user_id])
        return format_html('<a href="{}">{}</a>', url, coupon.user.get_username())

    @admin.display(description=gettext_lazy("status"))
    def coupon_status(self, coupon: UserCoupon) -> str:
        paid = getattr(coupon, "paid_among_page", None)  # set by get_changelist_instance
        return str(COUPON_STATUS_LABELS[shown_status(coupon, now=clock.now(), paid=paid)])

    def get_changelist_instance(self, request):
        """The page's coupons that a paid order used, in one query for the whole page."""
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)
        paid = reports.coupons_paid_for([coupon.pk for coupon in rows])
        for coupon in rows:
            coupon.paid_among_page = paid
        return changelist

    @admin.display(description=gettext_lazy("grant reason"))
    def reason(self, coupon: UserCoupon) -> str:
        return reason_text(coupon.grant_reason)

    @admin.display(description=gettext_lazy("granted by"))
    def granter(self, coupon: UserCoupon) -> str:
        """The staff member who granted it, by username; "–" for claims and codes."""
        granter = coupon.granted_by  # None without a query when granted_by_id is None
        if granter is None:
            return "–"
        url = reverse("admin:auth_user_change", args=[granter.pk])
        return format_html('<a href="{}">{}</a>', url, granter.get_username())

    @admin.display(description=gettext_lazy("claimed at"), ordering="created_at")
    def claimed_at(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.created_at)

    @admin.display(description=gettext_lazy("used at"), ordering="used_at")
    def used(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.used_at)

    @admin.display(description=gettext_lazy("order"))
    def order_link(self, coupon: UserCoupon) -> str:
        orders = reports.orders_using_coupons(coupon_ids=[coupon.pk], limit=RECENT_ROWS)
        if not orders:
            return "–"
        return format_html(
            "<br>".join(['<a href="{}">#{} ({})</a>'] * len(orders)),
            *[
                part
                for order in orders
                for part in (order.admin_url, order.order_id, order.status_label or order.status)
            ],
        )


class UserCouponInline(ReadOnlyAdminMixin, admin.TabularInline):
    """The user's newest coupons on their page; the full list is one link away."""

    model = UserCoupon
    fk_name = "user"  # not granted_by
    readonly_fields = (
        "coupon_link",
        "template",
        "coupon_status",
        "source",
        "reason",
        "claimed_at",
    )
    fields = readonly_fields
    extra = 0
    shown = 20
    verbose_name_plural = gettext_lazy("coupons (newest 20)")

    def get_queryset(self, request):
        newest = super().get_queryset(request).order_by("-id")
        return newest.select_related("template")

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        shown = self.shown

        class NewestOnly(formset):
            """An inline shows every row it is given: hand it the newest ones only (an id
            list, since a sliced queryset cannot be filtered further by the formset)."""

            def get_queryset(self):
                queryset = super().get_queryset()
                newest = list(queryset.values_list("pk", flat=True)[:shown])
                return queryset.filter(pk__in=newest)

        return NewestOnly

    @admin.display(description=gettext_lazy("coupon"))
    def coupon_link(self, coupon: UserCoupon) -> str:
        url = reverse("admin:coupons_usercoupon_change", args=[coupon.pk])
        return format_html('<a href="{}">#{}</a>', url, coupon.pk)

    @admin.display(description=gettext_lazy("status"))
    def coupon_status(self, coupon: UserCoupon) -> str:
        return str(COUPON_STATUS_LABELS[shown_status(coupon, now=clock.now())])

    @admin.display(description=gettext_lazy("grant reason"))
    def reason(self, coupon: UserCoupon) -> str:
        return reason_text(coupon.grant_reason)

    @admin.display(description=gettext_lazy("claimed at"))
    def claimed_at(self, coupon: UserCoupon) -> str:
        return local_datetime(coupon.created_at)
