"""The campaigns' admin (活动, SPEC section 27): each campaign with its budget, used and left,
its state and its templates' funnel; created and edited through the services (which check the
permissions and record each change), templates chosen by name."""

from django import forms
from django.contrib import admin
from django.contrib.admin import widgets
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice import reports
from backoffice.audit_admin import StaffHistoryAdmin
from backoffice.coupon_admin.display import local_datetime, rate_text
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core import clock
from core.admin_fields import MoneyField, RefusalAsFormErrorAdmin, RefusedOnSave
from core.money import MAX_AMOUNT_CENTS, format_money
from coupons.errors import CampaignInvalid
from coupons.models import CouponTemplate
from coupons.models.campaigns import Campaign
from coupons.services import campaigns as services


class CampaignForm(forms.ModelForm):
    budget = MoneyField(
        label=gettext_lazy("budget"),
        max_cents=MAX_AMOUNT_CENTS,
        required=False,
        help_text=gettext_lazy(
            "The most its coupons may take off orders, e.g. 5000.00; empty for no budget. "
            "Once it is spent its coupons are issued no more and cannot be used."
        ),
    )
    templates = forms.ModelMultipleChoiceField(
        label=gettext_lazy("coupon templates"),
        queryset=CouponTemplate.objects.order_by("-id"),
        required=False,
        widget=widgets.FilteredSelectMultiple(gettext_lazy("coupon templates"), is_stacked=False),
        help_text=gettext_lazy("A template belongs to one campaign at most."),
    )

    class Meta:
        model = Campaign
        fields = ["name", "starts_at", "ends_at", "budget"]
        widgets = {"starts_at": widgets.AdminSplitDateTime, "ends_at": widgets.AdminSplitDateTime}
        field_classes = {
            "starts_at": forms.SplitDateTimeField,
            "ends_at": forms.SplitDateTimeField,
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["templates"].initial = list(
                self.instance.templates.values_list("pk", flat=True)
            )


@admin.register(Campaign)
class CampaignAdmin(StaffHistoryAdmin, RefusalAsFormErrorAdmin):
    form = CampaignForm
    change_form_template = "admin/coupons/campaign/change_form.html"
    list_display = ["name", "dates", "budget_shown", "spent_shown", "left_shown", "state"]
    search_fields = ["name"]

    @admin.display(description=gettext_lazy("dates"), ordering="starts_at")
    def dates(self, campaign: Campaign) -> str:
        return f"{local_datetime(campaign.starts_at)} – {local_datetime(campaign.ends_at)}"

    @admin.display(description=gettext_lazy("budget"), ordering="budget")
    def budget_shown(self, campaign: Campaign) -> str:
        return format_money(campaign.budget) or _("no budget")

    @admin.display(description=gettext_lazy("budget used"), ordering="spent")
    def spent_shown(self, campaign: Campaign) -> str:
        return format_money(campaign.spent)

    @admin.display(description=gettext_lazy("budget left"))
    def left_shown(self, campaign: Campaign) -> str:
        return "–" if campaign.budget_left is None else format_money(campaign.budget_left)

    @admin.display(description=gettext_lazy("state"))
    def state(self, campaign: Campaign) -> str:
        return str(campaign_state(campaign))

    def has_view_permission(self, request, obj=None) -> bool:
        return staff_may(request.user, StaffAction.CAMPAIGN_VIEW)

    def has_add_permission(self, request) -> bool:
        return staff_may(request.user, StaffAction.CAMPAIGN_CREATE)

    def has_change_permission(self, request, obj=None) -> bool:
        return staff_may(request.user, StaffAction.CAMPAIGN_EDIT)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # its spending is history; a campaign ends, it is not deleted

    def change_view(self, request, object_id, form_url="", extra_context=None):
        campaign = self.get_object(request, object_id)
        if campaign is not None:
            funnel = reports.templates_with_funnel(now=clock.now()).filter(campaign=campaign)
            rows = [
                {
                    "template": template,
                    "claimed": template.claimed_count,
                    "total": template.total,
                    "used": template.used_count,
                    "rate": rate_text(
                        template.used_count / template.claimed_count
                        if template.claimed_count
                        else None
                    ),
                }
                for template in funnel
            ]
            extra_context = {
                **(extra_context or {}),
                "campaign_templates": rows,
                "budget_used": format_money(campaign.spent),
                "budget_left": self.left_shown(campaign),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change) -> None:
        fields = {field: form.cleaned_data[field] for field in services.CAMPAIGN_FIELDS}
        template_ids = [template.pk for template in form.cleaned_data["templates"]]
        try:
            if change:
                saved = services.campaign_edit(
                    campaign_id=obj.pk,
                    changes=fields,
                    template_ids=template_ids,
                    audit=staff_audit(request.user, StaffAction.CAMPAIGN_EDIT),
                )
            else:
                saved = services.campaign_create(
                    **fields,
                    template_ids=template_ids,
                    audit=staff_audit(request.user, StaffAction.CAMPAIGN_CREATE),
                )
        except CampaignInvalid as error:
            errors: dict[str | None, list[str]] = (
                {
                    ("templates" if field == "template_ids" else field): messages
                    for field, messages in error.fields.items()
                }
                if error.fields
                else {None: [str(error.detail)]}
            )
            raise RefusedOnSave(errors) from error
        obj.pk = saved.pk
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change) -> None:
        return None  # the templates were set by the service

    def log_addition(self, request, obj, message):
        return None  # the service recorded it

    def log_change(self, request, obj, message):
        return None


def campaign_state(campaign: Campaign):
    """Upcoming, running, ended; a running campaign whose budget is spent says so."""
    now = clock.now()
    if now < campaign.starts_at:
        return gettext_lazy("upcoming")
    if now >= campaign.ends_at:
        return gettext_lazy("ended")
    if campaign.budget_left is not None and campaign.budget_left <= 0:
        return gettext_lazy("budget spent")
    return gettext_lazy("running")
