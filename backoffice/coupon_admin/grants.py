"""The Django admin's "Grant to users" action: an intermediate page, then coupons.services
.grants.coupon_grant, the same service (and issuing core) as the admin API and grant_coupons.

Granting is its own permission (coupons.grant_coupons, SPEC section 17): the action, the
template page's button and the grant URL all ask `may_grant` (backoffice/staff_actions.py), and
so do the one function that calls the service and the service itself, which also records the
run in the template's history with its counts."""

from dataclasses import asdict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from backoffice.action_buttons import ButtonLook, looks
from backoffice.audit_messages import GRANT_OUTCOMES
from backoffice.staff_actions import StaffAction, staff_audit, staff_may
from core.domain_errors import DomainError
from coupons import selectors
from coupons.grant_reasons import (
    EVENT_REASON_PREFIX,
    GRANT_REASON_MAX_LENGTH,
    reason_kept_for_events,
)
from coupons.models import CouponTemplate
from coupons.services import grants

USERNAMES_SHOWN = 50  # per outcome in the result message; the rest are counted


def may_grant(request: HttpRequest) -> bool:
    return staff_may(request.user, StaffAction.COUPONS_GRANT)


class GrantForm(forms.Form):
    users = forms.CharField(
        label=gettext_lazy("users"),
        widget=forms.Textarea(attrs={"rows": 8, "cols": 40}),
    )
    reason = forms.CharField(
        label=gettext_lazy("reason"),
        max_length=GRANT_REASON_MAX_LENGTH,
        help_text=gettext_lazy(
            "Recorded on each coupon. The same grant again (same reason) issues nothing twice."
        ),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Formatted per request: a lazy text formatted at import would stay in English.
        self.fields["users"].help_text = _(
            "One username or user id per line (a line of digits is an id), at most %(count)d."
        ) % {"count": grants.MAX_GRANT_USERS}

    def clean_users(self) -> list[int | str]:
        entries = [line.strip() for line in self.cleaned_data["users"].splitlines()]
        entries = [entry for entry in entries if entry]
        if not 1 <= len(entries) <= grants.MAX_GRANT_USERS:
            raise forms.ValidationError(
                _("1 to %(count)d users, please.") % {"count": grants.MAX_GRANT_USERS}
            )
        return entries


class GrantFileForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("file of users"),
        help_text=gettext_lazy(
            "CSV (UTF-8 or as Excel saves it) or XLSX, at most 100,000 users. The first row "
            "names the users' column: user or 用户; each row a user id (digits) or a username."
        ),
    )
    reason = GrantForm.base_fields["reason"]

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if reason_kept_for_events(reason):
            raise forms.ValidationError(
                _("A reason may not begin with “%(prefix)s”: it names coupons issued by events.")
                % {"prefix": EVENT_REASON_PREFIX}
            )
        return reason


def grant_from_form(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    form: forms.Form,
    *,
    template: CouponTemplate,
    user_ids: list[int],
    unknown_names: int = 0,
) -> list[str] | None:
    """Grant through grants.coupon_grant with the form's reason, as the requesting staff
    member (the service records the run in the template's history). Returns one
    line per outcome that has users ("granted: alice, bob"), or None after putting the refusal
    on the form. Refuses (PermissionDenied) a staff member without the grant permission."""
    if not may_grant(request):
        raise PermissionDenied
    reason = form.cleaned_data["reason"]
    staff_id = request.user.pk
    assert staff_id is not None  # the admin site admits only signed-in staff
    try:
        result = grants.coupon_grant(
            template_id=template.pk,
            user_ids=user_ids,
            reason=reason,
            granted_by_id=staff_id,
            audit=staff_audit(request.user, StaffAction.COUPONS_GRANT),
            unknown_names=unknown_names,
        )
    except DomainError as error:
        details = [str(error.detail)]
        for field_messages in (error.fields or {}).values():
            details += [str(message) for message in field_messages]
        form.add_error(None, " ".join(details))
        return None
    outcomes = {outcome: ids for outcome, ids in asdict(result).items() if ids}
    names = usernames_of([user_id for ids in outcomes.values() for user_id in ids])
    return [
        f"{GRANT_OUTCOMES[outcome]}: {names_text(ids, names)}" for outcome, ids in outcomes.items()
    ]


def usernames_of(user_ids: list[int]) -> dict[int, str]:
    """One query for every user a result names."""
    model = get_user_model()
    field = model.USERNAME_FIELD
    return dict(model.objects.filter(pk__in=user_ids).values_list("pk", field))


def names_text(user_ids: list[int], names: dict[int, str]) -> str:
    shown = [names.get(user_id, f"#{user_id}") for user_id in user_ids[:USERNAMES_SHOWN]]
    text = ", ".join(shown)
    if len(user_ids) > USERNAMES_SHOWN:
        text += _(" and %(count)d more") % {"count": len(user_ids) - USERNAMES_SHOWN}
    return text


@admin.action(description=gettext_lazy("Grant to users…"), permissions=["grant"])
@looks(ButtonLook.ISSUE)
def grant_to_users(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[CouponTemplate]
) -> HttpResponse | None:
    if not may_grant(request):
        raise PermissionDenied
    if queryset.count() != 1:
        modeladmin.message_user(request, _("Select exactly one template to grant."), messages.ERROR)
        return None
    template = queryset.get()
    form = GrantForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        lookup = selectors.users_by_name_or_id(form.cleaned_data["users"])
        unknown = _("unknown usernames: %(names)s") % {"names": ", ".join(lookup.unknown_usernames)}
        if not lookup.user_ids:
            form.add_error("users", _("Nobody to grant to; %(unknown)s.") % {"unknown": unknown})
        else:
            outcomes = grant_from_form(
                modeladmin,
                request,
                form,
                template=template,
                user_ids=lookup.user_ids,
                unknown_names=len(lookup.unknown_usernames),
            )
            if outcomes is not None:
                if lookup.unknown_usernames:
                    outcomes.append(unknown)
                modeladmin.message_user(request, grant_message(template, outcomes))
                return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": _("Grant “%(template)s” to users") % {"template": template},
        "form": form,
        "template": template,
        "opts": modeladmin.model._meta,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/coupons/grant.html", context)


def grant_message(template: CouponTemplate, outcomes: list[str]) -> str:
    return _("Grant of %(template)s: %(outcomes)s.") % {
        "template": template,
        "outcomes": "; ".join(outcomes),
    }
