"""The user list's "Grant a coupon to the selected users" action, and the users' admin with
their newest coupons inline."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm, SetUnusablePasswordMixin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.account_admin.groups import PermissionLabelsMixin
from backoffice.account_admin.staff_access import StaffAccountGuard
from backoffice.action_buttons import ButtonLook, looks
from backoffice.audit_admin import StaffHistoryAdmin
from backoffice.coupon_admin import grants
from backoffice.coupon_admin.user_coupons import UserCouponInline
from coupons.grant_reasons import GRANT_REASON_MAX_LENGTH
from coupons.models import CouponTemplate
from coupons.services.grants import MAX_GRANT_USERS


class GrantToSelectedUsersForm(forms.Form):
    template = forms.ModelChoiceField(
        label=gettext_lazy("coupon template"),
        queryset=CouponTemplate.objects.order_by("-id"),
    )
    reason = forms.CharField(
        label=gettext_lazy("reason"),
        max_length=GRANT_REASON_MAX_LENGTH,
        help_text=gettext_lazy(
            "Recorded on each coupon. The same grant again (same reason) issues nothing twice."
        ),
    )


@admin.action(
    description=gettext_lazy("Grant a coupon to the selected users…"), permissions=["grant"]
)
@looks(ButtonLook.ISSUE)
def grant_coupon_to_users(modeladmin, request, queryset):
    """From the user list: pick a template and a reason, then coupons.services.grants.coupon_grant
    (the same service as the template's "Grant to users")."""
    if not grants.may_grant(request):
        raise PermissionDenied
    user_ids = list(queryset.order_by("pk").values_list("pk", flat=True)[: MAX_GRANT_USERS + 1])
    if len(user_ids) > MAX_GRANT_USERS:
        modeladmin.message_user(
            request,
            _("Select at most %(count)d users.") % {"count": MAX_GRANT_USERS},
            messages.ERROR,
        )
        return None
    form = GrantToSelectedUsersForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        template = form.cleaned_data["template"]
        outcomes = grants.grant_from_form(
            modeladmin, request, form, template=template, user_ids=user_ids
        )
        if outcomes is not None:
            modeladmin.message_user(request, grants.grant_message(template, outcomes))
            return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": _("Grant a coupon to %(count)d users") % {"count": len(user_ids)},
        "form": form,
        "user_ids": user_ids,
        "opts": modeladmin.model._meta,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/coupons/grant_to_selected_users.html", context)


class PasswordChangeInAdminLanguageForm(AdminPasswordChangeForm):
    """Django builds this form's help text by adding English to a lazy translation when the
    module is imported, so it never follows the language; rebuilt here per form."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "usable_password" in self.fields:
            self.fields["usable_password"].help_text = format_html(
                '{}<ul id="id_unusable_warning" class="messagelist"><li class="warning">{}'
                "</li></ul>",
                SetUnusablePasswordMixin.usable_password_help_text,
                _("If disabled, the current password for this user will be lost."),
            )


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class UserWithCouponsAdmin(StaffHistoryAdmin, StaffAccountGuard, PermissionLabelsMixin, UserAdmin):
    inlines = [*UserAdmin.inlines, UserCouponInline]
    change_password_form = PasswordChangeInAdminLanguageForm
    actions = [grant_coupon_to_users]

    def has_grant_permission(self, request) -> bool:
        return grants.may_grant(request)
