"""The Django admin's "Grant to users" action: an intermediate page, then coupons.services
.coupon_grant, the same service (and issuing core) as the admin API and grant_coupons."""

from dataclasses import asdict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from core.domain_errors import DomainError
from coupons import selectors
from coupons.models import GRANT_REASON_MAX_LENGTH, CouponTemplate
from coupons.services import grants


class GrantForm(forms.Form):
    users = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "cols": 40}),
        help_text="One username or user id per line (a line of digits is an id), "
        f"at most {grants.MAX_GRANT_USERS}.",
    )
    reason = forms.CharField(
        max_length=GRANT_REASON_MAX_LENGTH,
        help_text="Recorded on each coupon. The same grant again (same reason) issues nothing "
        "twice.",
    )

    def clean_users(self) -> list[int | str]:
        entries = [line.strip() for line in self.cleaned_data["users"].splitlines()]
        entries = [entry for entry in entries if entry]
        if not 1 <= len(entries) <= grants.MAX_GRANT_USERS:
            raise forms.ValidationError(f"1 to {grants.MAX_GRANT_USERS} users, please.")
        return entries


def grant_from_form(
    form: forms.Form, *, template: CouponTemplate, user_ids: list[int], granted_by_id: int
) -> list[str] | None:
    """Grant through grants.coupon_grant with the form's reason. Returns one line per
    outcome that has users ("granted: 3, 5"), or None after putting the refusal on the form."""
    try:
        result = grants.coupon_grant(
            template_id=template.pk,
            user_ids=user_ids,
            reason=form.cleaned_data["reason"],
            granted_by_id=granted_by_id,
        )
    except DomainError as error:
        form.add_error(None, f"{error.detail} {error.fields or ''}".strip())
        return None
    return [
        f"{outcome.replace('_', ' ')}: {', '.join(map(str, ids))}"
        for outcome, ids in asdict(result).items()
        if ids
    ]


@admin.action(description="Grant to users…")
def grant_to_users(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[CouponTemplate]
) -> HttpResponse | None:
    if queryset.count() != 1:
        modeladmin.message_user(request, "Select exactly one template to grant.", messages.ERROR)
        return None
    template = queryset.get()
    form = GrantForm(request.POST if "apply" in request.POST else None)
    staff_id = request.user.pk
    assert staff_id is not None  # the admin site admits only signed-in staff
    if form.is_valid():
        lookup = selectors.users_by_name_or_id(form.cleaned_data["users"])
        unknown = f"unknown usernames: {', '.join(lookup.unknown_usernames)}"
        if not lookup.user_ids:
            form.add_error("users", f"Nobody to grant to; {unknown}.")
        else:
            outcomes = grant_from_form(
                form, template=template, user_ids=lookup.user_ids, granted_by_id=staff_id
            )
            if outcomes is not None:
                if lookup.unknown_usernames:
                    outcomes.append(unknown)
                modeladmin.message_user(request, f"Grant of {template}: {'; '.join(outcomes)}.")
                return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Grant “{template}” to users",
        "form": form,
        "template": template,
        "opts": modeladmin.model._meta,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/coupons/grant.html", context)
