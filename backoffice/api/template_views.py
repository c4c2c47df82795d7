"""Admin REST API (Bearer + staff): publish, edit and list coupon templates, grant, pause,
resume, and their codes; a viewset on the router of backoffice/api/urls.py. The viewset names
the staff action of each of its actions; StaffActionPermission asks the permissions of that
action (backoffice/staff_actions.py, the table the Django admin and the commands use too) and
the service, given the caller as `actor`, asks again and records the action."""

from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from api.idempotency import idempotent
from api.schema import api_errors
from backoffice import reports
from backoffice.api.action_serializers import (
    GrantInputSerializer,
    GrantResultSerializer,
    MerchantCodesImportedSerializer,
    MerchantCodesImportInputSerializer,
    SingleUseCodesCreatedSerializer,
    SingleUseCodeSerializer,
    SingleUseCodesInputSerializer,
)
from backoffice.api.template_serializers import AdminTemplateSerializer, TemplateInputSerializer
from backoffice.staff_actions import StaffAction, StaffActionPermission, staff_audit
from coupons import selectors
from coupons.errors import (
    ClaimBudgetExhausted,
    ClaimNotInWindow,
    ClaimPaused,
    CodesCreationBusy,
    CodesFileInvalid,
    TemplateInvalid,
    TemplateNotFound,
)
from coupons.models import CouponTemplate
from coupons.services import codes, grants, merchant_codes, templates


class AdminTemplateViewSet(GenericViewSet):
    permission_classes = [IsAuthenticated, StaffActionPermission]
    staff_actions = {
        "list": StaffAction.TEMPLATE_VIEW,
        "create": StaffAction.TEMPLATE_PUBLISH,
        "retrieve": StaffAction.TEMPLATE_VIEW,
        "update": StaffAction.TEMPLATE_EDIT,
        "partial_update": StaffAction.TEMPLATE_EDIT,
        "grants": StaffAction.COUPONS_GRANT,
        "pause": StaffAction.TEMPLATE_PAUSE,
        "resume": StaffAction.TEMPLATE_RESUME,
        "codes": StaffAction.CODES_LIST,
        "codes_create": StaffAction.CODES_CREATE,
        "codes_import": StaffAction.CODES_IMPORT,
    }
    serializer_class = AdminTemplateSerializer
    lookup_url_kwarg = "template_id"
    lookup_value_converter = "id"  # api/converters.py

    def get_queryset(self):
        # Also what DRF's OPTIONS answer looks the template up in to describe PUT.
        return reports.templates_for_admin()

    @extend_schema(
        summary=gettext_lazy("Coupon templates"), responses=AdminTemplateSerializer(many=True)
    )
    def list(self, request):
        """Every template, newest first, with its counts (claimed, used): staff only."""
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(AdminTemplateSerializer(page, many=True).data)

    @extend_schema(
        summary=gettext_lazy("Publish a template"),
        request=TemplateInputSerializer,
        responses={201: AdminTemplateSerializer},
    )
    @api_errors(TemplateInvalid)
    def create(self, request):
        """Publish a template. Money in cents; `type` decides what `value` means (cents off,
        or percent off for `percent`); `scope` and `scope_ids` limit it to categories or
        products; a `code` lets shoppers redeem it, `visibility: hidden` keeps it off the
        shopper list. 400 `invalid` names each bad field."""
        payload = TemplateInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        template = templates.coupon_template_publish(
            **payload.validated_data, audit=staff_audit(request.user, StaffAction.TEMPLATE_PUBLISH)
        )
        data = AdminTemplateSerializer(reports.template_for_admin(template.pk)).data
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(summary=gettext_lazy("One template"), responses=AdminTemplateSerializer)
    @api_errors(TemplateNotFound)
    def retrieve(self, request, template_id: int):
        """One template with its counts; an unknown id is 404."""
        return Response(AdminTemplateSerializer(reports.template_for_admin(template_id)).data)

    @extend_schema(
        summary=gettext_lazy("Replace a template's terms"),
        request=TemplateInputSerializer,
        responses=AdminTemplateSerializer,
    )
    @api_errors(TemplateNotFound, TemplateInvalid)
    def update(self, request, template_id: int):
        """Replace a template's terms (every field, as on publish). Terms that coupons already
        issued depend on cannot change once claimed: 400 `invalid` naming them."""
        return self._edit(request, template_id, partial=False)

    @extend_schema(
        summary=gettext_lazy("Change a template's terms"),
        request=TemplateInputSerializer,
        responses=AdminTemplateSerializer,
    )
    @api_errors(TemplateNotFound, TemplateInvalid)
    def partial_update(self, request, template_id: int):
        """Change some of a template's terms (only the fields sent), under the same rules as
        PUT, e.g. raise `total` or move `valid_until`."""
        return self._edit(request, template_id, partial=True)

    def _edit(self, request, template_id: int, *, partial: bool) -> Response:
        # 404 before validation: a bad body for a missing template is still "not found".
        if not CouponTemplate.objects.filter(pk=template_id).exists():
            raise TemplateNotFound()
        payload = TemplateInputSerializer(data=request.data, partial=partial)
        payload.is_valid(raise_exception=True)
        templates.coupon_template_edit(
            template_id=template_id,
            changes=payload.validated_data,
            audit=staff_audit(request.user, StaffAction.TEMPLATE_EDIT),
        )
        return Response(AdminTemplateSerializer(reports.template_for_admin(template_id)).data)

    @extend_schema(
        summary=gettext_lazy("Grant coupons to users"),
        request=GrantInputSerializer,
        responses={200: GrantResultSerializer},
        description="Issue the template to these users (at most 1,000, taken in the order "
        "given) under the claim's rules: total and per-user limit, allowed before the claim "
        "window opens, 409 not_in_window once it has ended, 409 paused while it is paused "
        "(users reached after a pause during the grant are listed under `paused`; users who "
        "have paid for an order, on a new-customers template, under `not_eligible`). "
        "Idempotent per (template, user, reason): sending the same grant again issues nothing "
        "twice.",
    )
    @api_errors(
        TemplateNotFound, TemplateInvalid, ClaimNotInWindow, ClaimPaused, ClaimBudgetExhausted
    )
    @action(detail=True, methods=["post"], serializer_class=GrantResultSerializer)
    @idempotent
    def grants(self, request, template_id: int):
        # 404 before validation, like the other routes of one template.
        if not CouponTemplate.objects.filter(pk=template_id).exists():
            raise TemplateNotFound()
        payload = GrantInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        result = grants.coupon_grant(
            template_id=template_id,
            granted_by_id=request.user.pk,
            audit=staff_audit(request.user, StaffAction.COUPONS_GRANT),
            **payload.validated_data,
        )
        return Response(GrantResultSerializer(result).data)

    @extend_schema(
        summary=gettext_lazy("Pause claims"),
        request=None,
        responses=AdminTemplateSerializer,
        description="Pause the template: claims, codes and grants answer 409 paused and the "
        "shopper list shows it as paused; coupons already held stay usable. Idempotent.",
    )
    @api_errors(TemplateNotFound)
    @action(detail=True, methods=["post"])
    def pause(self, request, template_id: int):
        templates.coupon_template_pause(
            template_id=template_id, audit=staff_audit(request.user, StaffAction.TEMPLATE_PAUSE)
        )
        return Response(AdminTemplateSerializer(reports.template_for_admin(template_id)).data)

    @extend_schema(
        summary=gettext_lazy("Resume claims"),
        request=None,
        responses=AdminTemplateSerializer,
        description="Resume a paused template. Takes effect before this returns: a claim that "
        "starts after it is judged on the resumed template. Idempotent.",
    )
    @api_errors(TemplateNotFound)
    @action(detail=True, methods=["post"])
    def resume(self, request, template_id: int):
        templates.coupon_template_resume(
            template_id=template_id, audit=staff_audit(request.user, StaffAction.TEMPLATE_RESUME)
        )
        return Response(AdminTemplateSerializer(reports.template_for_admin(template_id)).data)

    @extend_schema(
        summary=gettext_lazy("A template's single-use codes"),
        responses=SingleUseCodeSerializer(many=True),
        description="The template's single-use codes in creation order, with who used each "
        "and when.",
    )
    @api_errors(TemplateNotFound)
    @action(detail=True, methods=["get"], serializer_class=SingleUseCodeSerializer)
    def codes(self, request, template_id: int):
        page = self.paginate_queryset(selectors.single_use_codes_of(template_id=template_id))
        return self.get_paginated_response(SingleUseCodeSerializer(page, many=True).data)

    @extend_schema(
        summary=gettext_lazy("Create single-use codes"),
        request=SingleUseCodesInputSerializer,
        responses={201: SingleUseCodesCreatedSerializer},
        description="Create `count` new unique single-use codes (12 characters without "
        "look-alikes: no 0/O, 1/I/L). Each issues the template once through "
        "`POST /api/coupons/redeem`. With `codes_only` the template is from then on issued "
        "only by its codes and by grants (not listed, not claimable by id); without it, it "
        "stays as it was. "
        "The codes never outnumber the remaining total (total - claimed - unused codes): "
        "400 naming `count`; 409 codes_busy while another creation for it runs past a minute.",
    )
    @api_errors(TemplateNotFound, TemplateInvalid, CodesCreationBusy)
    @codes.mapping.post
    def codes_create(self, request, template_id: int):
        # 404 before validation, like the other routes of one template.
        if not CouponTemplate.objects.filter(pk=template_id).exists():
            raise TemplateNotFound()
        payload = SingleUseCodesInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        created = codes.single_use_codes_create(
            template_id=template_id,
            count=payload.validated_data["count"],
            codes_only=payload.validated_data["codes_only"],
            audit=staff_audit(request.user, StaffAction.CODES_CREATE),
        )
        codes_only = bool(
            CouponTemplate.objects.filter(pk=template_id, has_single_use_codes=True).exists()
        )
        return Response(
            {"created": created, "codes_only": codes_only}, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        summary=gettext_lazy("Import merchant codes"),
        request={"multipart/form-data": MerchantCodesImportInputSerializer},
        responses={201: MerchantCodesImportedSerializer, 200: MerchantCodesImportedSerializer},
        description="Import single-use codes a merchant supplies, from a CSV or XLSX file "
        "(multipart field `file`). All or nothing: a row that is not a code, a code twice in "
        "the file, a code that exists already (a single-use code or a template's shared code) "
        "or more codes than the remaining total (total - claimed - unused codes) refuses the "
        "whole file with 400 `invalid`, each problem named by its row under `file`. Each "
        "imported code issues the template once through `POST /api/coupons/redeem`.",
    )
    @api_errors(TemplateNotFound, TemplateInvalid, CodesCreationBusy)
    @action(
        detail=True,
        methods=["post"],
        url_path="codes/import",
        parser_classes=[MultiPartParser],
        serializer_class=MerchantCodesImportInputSerializer,
    )
    def codes_import(self, request, template_id: int):
        if not CouponTemplate.objects.filter(pk=template_id).exists():
            raise TemplateNotFound()
        payload = MerchantCodesImportInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        dataset = merchant_codes.merchant_codes_read(name=upload.name, content=upload.read())
        if payload.validated_data["dry_run"]:
            check = merchant_codes.merchant_codes_check(template_id=template_id, dataset=dataset)
            if not check.importable:
                raise CodesFileInvalid(fields={"file": check.messages()})
            imported, answer = check.good, 200
        else:
            imported = merchant_codes.merchant_codes_import(
                template_id=template_id,
                dataset=dataset,
                file_name=upload.name,
                codes_only=payload.validated_data["codes_only"],
                audit=staff_audit(request.user, StaffAction.CODES_IMPORT),
            )
            answer = 201
        codes_only = CouponTemplate.objects.filter(pk=template_id, has_single_use_codes=True)
        return Response({"imported": imported, "codes_only": codes_only.exists()}, status=answer)
