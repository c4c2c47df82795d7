"""Shopper API (Bearer), as viewsets on the router of coupons/api/urls.py: the templates (the
list with my state, `claim` one, `redeem` a code) and my coupons."""

from django.http import HttpResponse
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from api.idempotency import idempotent
from api.schema import api_errors
from api.throttles import RedeemIPThrottle, RedeemThrottle
from core import clock
from coupons import issuing, selectors, shopper_list
from coupons.api.claim_authentication import ClaimAuthentication
from coupons.api.serializers import (
    MineQuerySerializer,
    RedeemInputSerializer,
    ShopperTemplateSerializer,
    UserCouponSerializer,
    user_coupon_data,
)
from coupons.errors import (
    ClaimBudgetExhausted,
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimPaused,
    ClaimSoldOut,
    ClaimThrottled,
    CodeUsed,
    TemplateNotFound,
)


def claimed_coupon_answer(view, request, effect_id: int, *args, **kwargs) -> Response:
    """The answer of a claim whose coupon committed but whose answer was lost
    (api.idempotency): 201 with the coupon as it stands now."""
    coupon = selectors.coupon_of_user(user_id=request.user.pk, coupon_id=effect_id)
    return Response(user_coupon_data(coupon, now=clock.now()), status=status.HTTP_201_CREATED)


# The templates a shopper sees, claims and redeems by code. (A comment, not a docstring: the
# schema would describe every action without a description of its own by it.)
class CouponTemplateViewSet(GenericViewSet):
    serializer_class = ShopperTemplateSerializer
    lookup_url_kwarg = "template_id"
    lookup_value_converter = "id"  # api/converters.py

    @extend_schema(
        summary=gettext_lazy("Coupons I can claim"),
        responses=ShopperTemplateSerializer(many=True),
    )
    def list(self, request):
        """The public templates a shopper can see, each with `state` for this user (claimable,
        not_started, ended, sold_out, limit_reached) and how many they hold (`claimed_by_me`)."""
        # One `now` for the whole page. The page is built by coupons.shopper_list (one
        # statement, terms kept in memory and already rendered as JSON);
        # ShopperTemplateSerializer and the paginator stay the documented shape, and
        # tests/coupons/test_shopper_list.py holds the answer equal to them byte for byte.
        items = shopper_list.shopper_page(
            user_id=request.user.pk, now=clock.now(), paginate=self.paginate_queryset
        )
        envelope = {
            "count": self.paginator.page.paginator.count,
            "next": self.paginator.get_next_link(),
            "previous": self.paginator.get_previous_link(),
        }
        body = shopper_list.page_json(envelope, items)
        return HttpResponse(body, content_type="application/json")

    # Claim one coupon of this template: 201 with the coupon, its own use window stamped at
    # issue; the database decides, so a claim is never over-issued. Safe to retry with an
    # Idempotency-Key. A claim without one is answered in front of Django by its lean twin,
    # coupons/api/claim_route.py, with the same answer byte for byte.
    @extend_schema(
        summary=gettext_lazy("Claim a coupon"),
        request=None,
        responses={201: UserCouponSerializer},
        description="Claim one coupon of a public template, decided in the order window "
        "(409 not_in_window), paused (409 paused), audience (409 not_eligible: a new-customers "
        "coupon and the caller has paid for an order), total (409 sold_out), per-user limit "
        "(409 limit_reached). A hidden template, or one issued by single-use codes, is 404.",
    )
    @api_errors(
        TemplateNotFound,
        ClaimNotInWindow,
        ClaimPaused,
        ClaimBudgetExhausted,
        ClaimNotEligible,
        ClaimSoldOut,
        ClaimLimitReached,
        ClaimThrottled,
    )
    @action(
        detail=True,
        methods=["post"],
        serializer_class=UserCouponSerializer,
        # The token's user is checked by the claim, in its own round trips
        # (claim_authentication.py).
        authentication_classes=[ClaimAuthentication],
        # The claim throttle is counted in the claim's own Redis round trip (SPEC section 15),
        # per user and template: coupons.issuing.service raises ClaimThrottled.
        throttle_classes=[],
    )
    @idempotent(effect_answer=claimed_coupon_answer)
    def claim(self, request, template_id: int, *, effect_record):
        coupon = issuing.coupon_claim(
            template_id=template_id,
            user_id=request.user.pk,
            bearer=request.auth,  # a TokenBearer, or None when authenticated in full
            effect_record=effect_record,
        )
        data = user_coupon_data(coupon, now=clock.now())
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary=gettext_lazy("Claim a coupon by its code"),
        request=RedeemInputSerializer,
        responses={201: UserCouponSerializer},
        description="Claim the coupon that has this code (public or hidden), or the template of "
        "a single-use code, through the same path as a claim: 409 not_in_window / paused / "
        "not_eligible / sold_out / limit_reached; a single-use code already used is 409 "
        "code_used (of many users racing one code exactly one wins); an unknown code is 404.",
    )
    @api_errors(
        TemplateNotFound,
        CodeUsed,
        ClaimNotInWindow,
        ClaimPaused,
        ClaimBudgetExhausted,
        ClaimNotEligible,
        ClaimSoldOut,
        ClaimLimitReached,
    )
    @action(
        detail=False,
        methods=["post"],
        serializer_class=UserCouponSerializer,
        # SPEC sections 12 and 19; they also bound guessing hidden codes
        throttle_classes=[RedeemThrottle, RedeemIPThrottle],
    )
    @idempotent(effect_answer=claimed_coupon_answer)
    def redeem(self, request, *, effect_record):
        payload = RedeemInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        coupon = issuing.coupon_redeem(
            code=payload.validated_data["code"],
            user_id=request.user.pk,
            effect_record=effect_record,
        )
        data = user_coupon_data(coupon, now=clock.now())
        return Response(data, status=status.HTTP_201_CREATED)


class MyCouponViewSet(GenericViewSet):
    serializer_class = UserCouponSerializer

    @extend_schema(
        summary=gettext_lazy("My coupons"),
        parameters=[OpenApiParameter("status", enum=selectors.MINE_STATUSES, required=False)],
        responses=UserCouponSerializer(many=True),
    )
    def list(self, request):
        """My coupons, newest first, optionally only those `unused`, `used` or `expired` (derived
        from the coupon's use window at the time of asking), each with its template's terms."""
        query = MineQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        now = clock.now()
        coupons = selectors.coupons_of_user(
            user_id=request.user.pk, status=query.validated_data.get("status"), now=now
        )
        page = self.paginate_queryset(coupons)
        data = UserCouponSerializer(page, many=True, context={"now": now}).data
        return self.get_paginated_response(data)
