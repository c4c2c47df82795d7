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
    user_facts_load,
    user_of_token,
)
from accounts.demo_users import DEMO_PASSWORD
from accounts.registration import RegistrationInvalid, account_register
from accounts.throttles import LoginThrottle, RefreshThrottle, RegisterThrottle
from api.schema import api_errors
from api.serializers import StrictSerializer, StringField


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


class RegisterSerializer(StrictSerializer):
    username = StringField(max_length=150)
    password = StringField(write_only=True, trim_whitespace=False)


class RegisteredSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    access = serializers.CharField()
    refresh = serializers.CharField()


class RegisterView(NoStore, APIView):
    """POST /api/auth/register: a shopper signs up and is signed in (SPEC section 35)."""

    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [RegisterThrottle]

    @extend_schema(
        summary=gettext_lazy("Sign up: a new shopper account"),
        description="A username (letters, digits and @.+-_, up to 150) and a password under "
        "the password rules (at least 8 characters, not common, not all digits, not like the "
        "username) create a shopper account, which earns the sign-up coupons (注册赠券) like "
        "any account, and answer its token pair, signed in. A taken name (whatever its case) "
        "or a refused password is 400 `invalid` naming the field. Attempts are throttled per "
        "address and per name tried (429), whatever their answer.",
        request=RegisterSerializer,
        responses={201: RegisteredSerializer},
        examples=[
            OpenApiExample(
                "A new shopper",
                request_only=True,
                value={"username": "carol", "password": "spring-tea-2026"},
            ),
            OpenApiExample(
                "Signed up and signed in",
                response_only=True,
                status_codes=["201"],
                value={
                    "id": 4,
                    "username": "carol",
                    "access": ACCESS_EXAMPLE,
                    "refresh": REFRESH_EXAMPLE,
                },
            ),
        ],
    )
    @api_errors(RegistrationInvalid)
    def post(self, request) -> Response:
        body = RegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = account_register(**body.validated_data)
        refresh = LoginSerializer.get_token(user)
        assert isinstance(refresh, RefreshToken)  # simplejwt's pair login makes
        user_facts_load([user.pk])  # its first requests are authenticated with no query
        answer = {
            "id": user.pk,
            "username": user.get_username(),
            "access": str(refresh.access_token),
            "refresh": str(refresh),
        }
        return Response(answer, status=status.HTTP_201_CREATED)


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
