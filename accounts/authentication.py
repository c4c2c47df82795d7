"""JWT authentication and refresh that answer 401, never 500, for any token we could have
signed: a deleted user, an odd `user_id`, a revoked password, a deactivated account.

Revocation costs no query: simplejwt's CHECK_REVOKE_TOKEN puts a digest of the user's
password hash in every token, and authentication compares it with the user row it loads
anyway. A password change therefore revokes every access and refresh token the user holds;
deactivation is refused by the is_active check, and starts a new token generation
(accounts.models.TokenGeneration), so that reactivating revives no token issued before."""

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from drf_spectacular.contrib.rest_framework_simplejwt import (
    SimpleJWTScheme,
    TokenObtainPairSerializerExtension,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import InvalidToken
from rest_framework_simplejwt.serializers import (
    TokenObtainPairSerializer,
    TokenRefreshSerializer,
)
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import RefreshToken, Token
from rest_framework_simplejwt.utils import get_md5_hash_password

from accounts.models import TokenGeneration
from api.serializers import StringField

MAX_USER_ID_DIGITS = 18
# The token generation a token was issued in (accounts.models.TokenGeneration).
TOKEN_GENERATION_CLAIM = "gen"


def user_id_from_claim(value: object) -> int | None:
    """The user id a token names, if it is a plain positive id (an int, or digits as simplejwt
    writes non-int ids); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value < 10**MAX_USER_ID_DIGITS else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value) if len(value) <= MAX_USER_ID_DIGITS and int(value) > 0 else None
    return None


def user_of_token(token: Token):
    """The active user a token belongs to, with the token not revoked; else 401."""
    user_id = user_id_from_claim(token.payload.get(api_settings.USER_ID_CLAIM))
    if user_id is None:
        raise InvalidToken("Token contained no recognizable user identification")
    user = (
        get_user_model()
        .objects.select_related("token_generation")  # a LEFT JOIN: still one query
        .filter(**{api_settings.USER_ID_FIELD: user_id})
        .first()
    )
    if user is None:
        raise AuthenticationFailed(_("User not found"), code="user_not_found")
    if not user.is_active:
        raise AuthenticationFailed(_("User is inactive"), code="user_inactive")
    if token.payload.get(api_settings.REVOKE_TOKEN_CLAIM) != get_md5_hash_password(user.password):
        raise AuthenticationFailed(_("The token was revoked."), code="token_revoked")
    if token.payload.get(TOKEN_GENERATION_CLAIM, 0) != token_generation_of(user):
        raise AuthenticationFailed(_("The token was revoked."), code="token_revoked")
    return user


def token_generation_of(user) -> int:
    """The user's token generation (accounts.models.TokenGeneration): 0 until a first
    deactivation. Costs no query when the user was loaded with select_related."""
    try:
        return user.token_generation.generation
    except TokenGeneration.DoesNotExist:
        return 0


class RevocableJWTAuthentication(JWTAuthentication):
    """simplejwt's authentication with user_of_token's checks (one query, as before)."""

    def get_user(self, validated_token: Token):
        return user_of_token(validated_token)


class LoginSerializer(TokenObtainPairSerializer):
    """simplejwt's login, with a username that must be a JSON string (DRF's CharField logs
    `12345` in as "12345", past the login throttle, which counts only strings), and tokens
    stamped with the user's token generation (a refresh copies it into the new pair)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields[self.username_field] = StringField(write_only=True)

    @classmethod
    def get_token(cls, user) -> Token:
        token = super().get_token(user)
        token[TOKEN_GENERATION_CLAIM] = token_generation_of(user)
        return token


class RevocableTokenRefreshSerializer(TokenRefreshSerializer):
    """Refresh with rotation: the presented token must be unexpired, not blacklisted, of an
    existing active user, issued under the current password; it is blacklisted and a new
    pair is returned."""

    def validate(self, attrs: dict) -> dict:
        refresh = RefreshToken(attrs["refresh"])  # TokenError (-> 401) if bad or blacklisted
        user_of_token(refresh)
        data = {"access": str(refresh.access_token)}
        refresh.blacklist()
        refresh.set_jti()
        refresh.set_exp()
        refresh.set_iat()
        refresh.outstand()
        data["refresh"] = str(refresh)
        return data


class RevocableJWTScheme(SimpleJWTScheme):
    """The API schema describes it as the Bearer JWT it is (drf-spectacular's simplejwt
    extension matches only simplejwt's own class)."""

    target_class = "accounts.authentication.RevocableJWTAuthentication"


class LoginSerializerSchema(TokenObtainPairSerializerExtension):
    """The login's request and answer in the API schema, as for simplejwt's own serializer
    (the extension matches only that exact class)."""

    target_class = "accounts.authentication.LoginSerializer"
