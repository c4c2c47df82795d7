"""Staff work on campaigns (SPEC section 27): create and edit a campaign (name, dates, budget)
and choose its templates. Each change is asked and recorded with its amounts in its transaction
by the audit the back office passes (core/staff_audit.py). A template joins or leaves a
campaign under its own row lock as a change of its terms (the claim path keeps `campaign_id`
with them), so a claim never reads a campaign the template has left."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from core.money import MAX_AMOUNT_CENTS, format_money
from core.staff_audit import NOT_STAFF, StaffAudit
from coupons.errors import CampaignInvalid, CampaignNotFound
from coupons.issuing import next_version, terms_change
from coupons.models import CouponTemplate
from coupons.models.campaigns import CAMPAIGN_NAME_MAX_LENGTH, Campaign

CAMPAIGN_FIELDS = ("name", "starts_at", "ends_at", "budget")
MAX_CAMPAIGN_TEMPLATES = 500


def campaign_create(
    *,
    name: str,
    starts_at: datetime,
    ends_at: datetime,
    budget: int | None = None,
    template_ids: Iterable[int] = (),
    audit: StaffAudit = NOT_STAFF,
) -> Campaign:
    """A new campaign with these templates (none of them in another campaign). 400 `invalid`
    naming the field for a blank or long name, dates out of order, a budget out of range or
    a template that is unknown or taken."""
    audit.check()
    fields = _validated(
        {"name": name, "starts_at": starts_at, "ends_at": ends_at, "budget": budget}
    )
    with transaction.atomic():
        campaign = Campaign.objects.create(**fields)
        chosen = _templates_set(campaign, template_ids)
        audit.record(campaign, {**fields, "templates": chosen})
    return campaign


def campaign_edit(
    *,
    campaign_id: int,
    changes: dict[str, Any],
    template_ids: Iterable[int] | None = None,
    audit: StaffAudit = NOT_STAFF,
) -> Campaign:
    """Change some of CAMPAIGN_FIELDS and, when `template_ids` is given, make those the
    campaign's templates (the others leave it). A budget may not go below what is spent."""
    audit.check()
    unknown = sorted(set(changes) - set(CAMPAIGN_FIELDS))
    if unknown:
        raise CampaignInvalid(fields={field: [_("Unknown field.")] for field in unknown})
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            raise CampaignNotFound()
        before = {field: getattr(campaign, field) for field in CAMPAIGN_FIELDS}
        fields = _validated({**before, **changes})
        if fields["budget"] is not None and fields["budget"] < campaign.spent:
            message = _("At least what is spent already: %(spent)s.")
            spent = format_money(campaign.spent)
            raise CampaignInvalid(fields={"budget": [message % {"spent": spent}]})
        Campaign.objects.filter(pk=campaign_id).update(**fields)
        for field, value in fields.items():
            setattr(campaign, field, value)
        amounts: dict[str, Any] = {
            field: [before[field], fields[field]]
            for field in CAMPAIGN_FIELDS
            if before[field] != fields[field]
        }
        if template_ids is not None:
            amounts["templates"] = _templates_set(campaign, template_ids)
        audit.record(campaign, amounts)
    return campaign


def _validated(fields: dict[str, Any]) -> dict[str, Any]:
    problems: dict[str, list[str]] = {}
    name = fields["name"]
    if not isinstance(name, str) or not name.strip():
        problems["name"] = [_("A name is required.")]
    elif len(name.strip()) > CAMPAIGN_NAME_MAX_LENGTH:
        problems["name"] = [
            _("At most %(count)d characters.") % {"count": CAMPAIGN_NAME_MAX_LENGTH}
        ]
    starts_at, ends_at = fields["starts_at"], fields["ends_at"]
    for field in ("starts_at", "ends_at"):
        if not isinstance(fields[field], datetime) or fields[field].tzinfo is None:
            problems[field] = [_("A date and time with its time zone is required.")]
    if "starts_at" not in problems and "ends_at" not in problems and ends_at <= starts_at:
        problems["ends_at"] = [_("Must be after the start.")]
    budget = fields["budget"]
    if budget is not None and (
        not isinstance(budget, int)
        or isinstance(budget, bool)
        or not 0 <= budget <= MAX_AMOUNT_CENTS
    ):
        problems["budget"] = [
            _("Cents from 0 to %(max)d, or null for no budget.") % {"max": MAX_AMOUNT_CENTS}
        ]
    if problems:
        raise CampaignInvalid(fields=problems)
    return {**fields, "name": name.strip()}


def _templates_set(campaign: Campaign, template_ids: Iterable[int]) -> list[int]:
    """Make `template_ids` the campaign's templates, each under its row lock in id order (the
    order every multi-template change takes). Returns them sorted."""
    wanted = sorted(set(template_ids))
    if len(wanted) > MAX_CAMPAIGN_TEMPLATES:
        message = _("At most %(count)d templates.") % {"count": MAX_CAMPAIGN_TEMPLATES}
        raise CampaignInvalid(fields={"template_ids": [message]})
    leaving = set(
        CouponTemplate.objects.filter(campaign_id=campaign.pk).values_list("pk", flat=True)
    ) - set(wanted)
    for template_id in sorted(set(wanted) | leaving):
        template = CouponTemplate.objects.select_for_update().filter(pk=template_id).first()
        if template is None:
            message = _("No template %(id)d.") % {"id": template_id}
            raise CampaignInvalid(fields={"template_ids": [message]})
        target = campaign.pk if template_id in wanted else None
        if template.campaign_id not in (None, campaign.pk) and target is not None:
            message = _("Template %(id)d belongs to another campaign.") % {"id": template_id}
            raise CampaignInvalid(fields={"template_ids": [message]})
        if template.campaign_id == target:
            continue
        with terms_change(template):
            stamp = next_version(template.updated_at)  # the claim path's terms change
            CouponTemplate.objects.filter(pk=template_id).update(
                campaign_id=target, updated_at=stamp
            )
            template.campaign_id, template.updated_at = target, stamp
    return wanted
