"""The admin list filters: a template's state and type, a coupon's status (the one status
expression, coupons.selectors)."""

from django.contrib import admin
from django.utils.translation import gettext_lazy

from backoffice.coupon_admin.display import COUPON_STATUS_LABELS, STATE_LABELS, TYPE_LABELS
from core import clock
from coupons.coupon_status import CouponStatus, coupon_status_q
from coupons.models import CouponTemplate
from coupons.rules import ClaimState, template_state_where


class StateFilter(admin.SimpleListFilter):
    title = gettext_lazy("state")
    parameter_name = "state"

    STATES = (
        ClaimState.NOT_STARTED,
        ClaimState.ACTIVE,
        ClaimState.PAUSED,
        ClaimState.SOLD_OUT,
        ClaimState.ENDED,
    )

    def lookups(self, request, model_admin):
        return [(state.value, STATE_LABELS[state.value]) for state in self.STATES]

    def queryset(self, request, queryset):
        if self.value() not in {state.value for state in self.STATES}:
            return queryset
        state = ClaimState(self.value())
        return queryset.filter(template_state_where(state, now=clock.now()))


class TypeFilter(admin.SimpleListFilter):
    title = gettext_lazy("type")
    parameter_name = "type"

    def lookups(self, request, model_admin):
        return [(kind.value, label) for kind, label in TYPE_LABELS.items()]

    def queryset(self, request, queryset):
        if self.value() in CouponTemplate.Type.values:
            return queryset.filter(type=self.value())
        return queryset


class DerivedStatusFilter(admin.SimpleListFilter):
    title = gettext_lazy("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return list(COUPON_STATUS_LABELS.items())

    def queryset(self, request, queryset):
        if self.value() not in CouponStatus.values:
            return queryset
        return queryset.filter(coupon_status_q(CouponStatus(self.value()), now=clock.now()))
