"""JWT authentication and refresh that answer 401, never 500, for any token we could have
signed: a deleted user, an odd `user_id`, a revoked password, a deactivated account.

Revocation costs no query: simplejwt's CHECK_REVOKE_TOKEN puts a digest of the user's
password hash in every token, and authentication compares it with the user row it loads
anyway. A password change therefore revokes every access and refresh token the user holds;
deactivation is refused by the is_active check (and accounts.token_revocation blacklists the
user's refresh tokens so that reactivating does not revive them)."""

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from drf_spectacular.contrib.rest_framework_simplejwt import SimpleJWTScheme
from rest_framework.exceptions import AuthenticationFailed
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import InvalidToken
from rest_framework_simplejwt.serializers import TokenRefreshSerializer
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import RefreshToken, Token
from rest_framework_simplejwt.utils import get_md5_hash_password

MAX_USER_ID_DIGITS = 18


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
    user_model = get_user_model()
    # get(), not filter().first(): first() adds an ORDER BY whose compiling cost every
    # authenticated request about 0.15 ms of CPU, the most of what version 2 had added to the
    # baseline (docs/measurements/2026-11-30-shopper-list-and-baseline.md).
    try:
        user = user_model.objects.get(**{api_settings.USER_ID_FIELD: user_id})
    except user_model.DoesNotExist:
        raise AuthenticationFailed(_("User not found"), code="user_not_found") from None
    if not user.is_active:
        raise AuthenticationFailed(_("User is inactive"), code="user_inactive")
    if token.payload.get(api_settings.REVOKE_TOKEN_CLAIM) != get_md5_hash_password(user.password):
        raise AuthenticationFailed(_("The token was revoked."), code="token_revoked")
    return user


class RevocableJWTAuthentication(JWTAuthentication):
    """simplejwt's authentication with user_of_token's checks (one query, as before)."""

    def get_user(self, validated_token: Token):
        return user_of_token(validated_token)


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
