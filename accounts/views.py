from django.utils.translation import gettext_lazy
from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_serializer,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework_simplejwt.exceptions import InvalidToken, TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import RefreshToken
from rest_framework_simplejwt.views import TokenObtainPairView, TokenRefreshView

from accounts.authentication import (
    LoginSerializer,
    RevocableTokenRefreshSerializer,
    user_of_token,
)
from accounts.demo_users import DEMO_PASSWORD
from accounts.throttles import LoginThrottle, RefreshThrottle
from api.schema import api_errors
from api.serializers import StrictSerializer


class NoStore:
    """Token answers must not be kept by any cache (SPEC section 12): errors included."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response


# How long an access token lasts, as the schema says it (settings.SIMPLE_JWT).
ACCESS_TOKEN_MINUTES = int(api_settings.ACCESS_TOKEN_LIFETIME.total_seconds() // 60)
# What the schema shows for tokens: their start and end, as a client sees them (an example
# has no real signature to give; the shape is what the live-answer test checks).
ACCESS_EXAMPLE = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoiYWNjZXNzIn0.c2lnbmF0dXJl"
REFRESH_EXAMPLE = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCJ9.c2lnbmF0dXJl"
)
TOKEN_PAIR_EXAMPLE = OpenApiExample(
    "A token pair",
    response_only=True,
    value={"access": ACCESS_EXAMPLE, "refresh": REFRESH_EXAMPLE},
)
REFRESH_REQUEST_EXAMPLE = OpenApiExample(
    "A refresh token", request_only=True, value={"refresh": REFRESH_EXAMPLE}
)


@extend_schema_view(
    post=extend_schema(
        summary=gettext_lazy("Log in: a token pair"),
        description="A username and password for an access token "
        f"({ACCESS_TOKEN_MINUTES} minutes) and a refresh "
        "token. Failed logins are throttled per username and address, per username and per "
        "address; a successful login is not counted.",
        examples=[
            OpenApiExample(
                "A username and password",
                request_only=True,
                value={"username": "alice", "password": DEMO_PASSWORD},
            ),
            TOKEN_PAIR_EXAMPLE,
        ],
    )
)
class TokenObtainView(NoStore, TokenObtainPairView):
    """POST /api/auth/token: failures throttled per (username, client IP), per username and
    per client IP (accounts.throttles); a successful login is not counted."""

    serializer_class = LoginSerializer
    throttle_classes = [LoginThrottle]
    login_attempt = None  # set by LoginThrottle

    def post(self, request, *args, **kwargs) -> Response:
        response = super().post(request, *args, **kwargs)  # wrong password: raises, counted
        if self.login_attempt is not None:
            self.login_attempt.succeeded()
        return response


@extend_schema_view(
    post=extend_schema(
        summary=gettext_lazy("Refresh the token pair"),
        examples=[REFRESH_REQUEST_EXAMPLE, TOKEN_PAIR_EXAMPLE],
    )
)
class TokenRefreshRotatingView(NoStore, TokenRefreshView):
    """POST /api/auth/token/refresh: a new pair; the presented refresh token is blacklisted.
    Throttled per user (SPEC section 19): each refresh writes two rows kept for days."""

    serializer_class = RevocableTokenRefreshSerializer
    throttle_classes = [RefreshThrottle]


@extend_schema_serializer(examples=[REFRESH_REQUEST_EXAMPLE])
class LogoutSerializer(StrictSerializer):
    refresh = serializers.CharField()


class LogoutView(NoStore, APIView):
    """POST /api/auth/logout {"refresh"}: blacklist that refresh token. Holding it is the
    credential, so no access token is needed (one that has expired must not stop a logout)."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def get_authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'  # a bad refresh token is 401, as on /token/refresh

    @extend_schema(summary=gettext_lazy("Log out"), request=LogoutSerializer, responses={204: None})
    @api_errors(InvalidToken)
    def post(self, request) -> Response:
        body = LogoutSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            refresh = RefreshToken(body.validated_data["refresh"])
        except TokenError as error:
            raise InvalidToken(error.args[0]) from None
        user_of_token(refresh)
        refresh.blacklist()
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    summary=gettext_lazy("Who I am"),
    description="The account the Bearer token belongs to.",
    responses=inline_serializer(
        "Me",
        {
            "id": serializers.IntegerField(),
            "username": serializers.CharField(),
            "is_staff": serializers.BooleanField(),
        },
    ),
    examples=[
        OpenApiExample(
            "A shopper",
            response_only=True,
            value={"id": 2, "username": "alice", "is_staff": False},
        )
    ],
)
@api_view(["GET"])
def me(request) -> Response:
    """Who the Bearer token belongs to. Also the benchmarks' baseline: the claim endpoint's
    authentication and nothing else."""
    user = request.user
    return Response({"id": user.pk, "username": user.get_username(), "is_staff": user.is_staff})
