"""The campaigns' admin API (SPEC section 27): list, create, read and edit campaigns (Bearer,
staff with the campaign permissions of backoffice/staff_actions.py; the services ask again and
record each change), a viewset on the router of backoffice/api/urls.py. Money in cents."""

from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from api.schema import api_errors
from api.serializers import StrictSerializer
from backoffice.staff_actions import StaffAction, StaffActionPermission, staff_audit
from core.limits import MAX_BIGINT
from coupons.errors import CampaignInvalid, CampaignNotFound
from coupons.models.campaigns import CAMPAIGN_NAME_MAX_LENGTH, Campaign
from coupons.services import campaigns as services

EXAMPLE = {  # the demo's campaign
    "id": 1,
    "name": "演示活动：优惠预算1,000元",
    "starts_at": "2026-11-30T09:00:00.000+08:00",
    "ends_at": "2026-12-31T09:00:00.000+08:00",
    "budget": 100000,
    "spent": 0,
    "budget_left": 100000,
    "template_ids": [2, 5],
}


@extend_schema_serializer(
    examples=[OpenApiExample("A campaign", value=EXAMPLE, response_only=True)]
)
class CampaignSerializer(serializers.ModelSerializer):
    budget_left = serializers.IntegerField(
        allow_null=True, help_text="budget - spent, in cents; null without a budget."
    )
    template_ids = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "starts_at",
            "ends_at",
            "budget",
            "spent",
            "budget_left",
            "template_ids",
        ]

    def get_template_ids(self, campaign: Campaign) -> list[int]:
        return sorted(template.pk for template in campaign.templates.all())


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A campaign with a budget",
            request_only=True,
            value={
                "name": "双十一",
                "starts_at": "2026-11-01T00:00:00+08:00",
                "ends_at": "2026-11-12T00:00:00+08:00",
                "budget": 500000,
                "template_ids": [3, 4],
            },
        )
    ]
)
class CampaignInputSerializer(StrictSerializer):
    """The types only; the rules (dates in order, budget range, templates free) are the
    service's, 400 naming the field."""

    name = serializers.CharField(max_length=CAMPAIGN_NAME_MAX_LENGTH)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    budget = serializers.IntegerField(
        allow_null=True,
        required=False,
        default=None,
        min_value=0,
        max_value=MAX_BIGINT,
        help_text="Cents of discount its coupons may take off orders; null: no budget.",
    )
    template_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_BIGINT),
        required=False,
        max_length=services.MAX_CAMPAIGN_TEMPLATES,
        help_text="Its templates (each in no other campaign). On edit: the whole new list.",
    )


def _campaigns():
    return Campaign.objects.prefetch_related("templates").order_by("-id")


class AdminCampaignViewSet(GenericViewSet):
    permission_classes = [IsAuthenticated, StaffActionPermission]
    staff_actions = {
        "list": StaffAction.CAMPAIGN_VIEW,
        "create": StaffAction.CAMPAIGN_CREATE,
        "retrieve": StaffAction.CAMPAIGN_VIEW,
        "partial_update": StaffAction.CAMPAIGN_EDIT,
    }
    serializer_class = CampaignSerializer
    lookup_url_kwarg = "campaign_id"
    lookup_value_converter = "id"  # api/converters.py

    def get_queryset(self):
        return _campaigns()

    @extend_schema(summary=gettext_lazy("Campaigns"), responses=CampaignSerializer(many=True))
    def list(self, request):
        """Every campaign, newest first, with its budget spent and left."""
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(CampaignSerializer(page, many=True).data)

    @extend_schema(
        summary=gettext_lazy("Create a campaign"),
        request=CampaignInputSerializer,
        responses={201: CampaignSerializer},
    )
    @api_errors(CampaignInvalid)
    def create(self, request):
        """Create a campaign (活动) with an optional budget and its templates. The discount of
        each of their coupons used at checkout is taken from the budget; a checkout it cannot
        cover is 409 `budget_exhausted`, and once it is spent the templates issue nothing."""
        payload = CampaignInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        campaign = services.campaign_create(
            **payload.validated_data, audit=staff_audit(request.user, StaffAction.CAMPAIGN_CREATE)
        )
        return Response(
            CampaignSerializer(_campaigns().get(pk=campaign.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(summary=gettext_lazy("One campaign"), responses=CampaignSerializer)
    @api_errors(CampaignNotFound)
    def retrieve(self, request, campaign_id: int):
        """One campaign; an unknown id is 404."""
        campaign = _campaigns().filter(pk=campaign_id).first()
        if campaign is None:
            raise CampaignNotFound()
        return Response(CampaignSerializer(campaign).data)

    @extend_schema(
        summary=gettext_lazy("Change a campaign"),
        request=CampaignInputSerializer,
        responses=CampaignSerializer,
    )
    @api_errors(CampaignNotFound, CampaignInvalid)
    def partial_update(self, request, campaign_id: int):
        """Change some of its name, dates and budget (not below what is spent), and with
        `template_ids` its templates."""
        if not Campaign.objects.filter(pk=campaign_id).exists():
            raise CampaignNotFound()
        payload = CampaignInputSerializer(data=request.data, partial=True)
        payload.is_valid(raise_exception=True)
        changes = dict(payload.validated_data)
        template_ids = changes.pop("template_ids", None)
        services.campaign_edit(
            campaign_id=campaign_id,
            changes=changes,
            template_ids=template_ids,
            audit=staff_audit(request.user, StaffAction.CAMPAIGN_EDIT),
        )
        return Response(CampaignSerializer(_campaigns().get(pk=campaign_id)).data)
