"""JWT authentication and refresh that answer 401, never 500, for any token we could have
signed: a deleted user, an odd `user_id`, a revoked password, a deactivated account.

Revocation costs no query: simplejwt's CHECK_REVOKE_TOKEN puts a digest of the user's
password hash in every token, and authentication compares it with the user's facts (from
Redis, or the row it loads: accounts/user_facts.py). A password change therefore revokes
every access and refresh token the user holds; deactivation is refused by the is_active
check, and starts a new token generation (accounts.models.TokenGeneration), so that
reactivating revives no token issued before."""

import functools
import re
import time
from dataclasses import dataclass
from typing import NoReturn

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
from accounts.user_facts import (
    UserFacts,
    user_facts_lookup,
    user_facts_of_reply,
    user_facts_read_call,
    user_facts_remember,
    user_from_facts,
)
from api.serializers import StringField
from core.redis_scripts import ScriptCall

MAX_USER_ID_DIGITS = 18
# The token generation a token was issued in (accounts.models.TokenGeneration), at most what
# its column holds (INT UNSIGNED).
TOKEN_GENERATION_CLAIM = "gen"
MAX_TOKEN_GENERATION = 2**32 - 1
# What simplejwt's get_md5_hash_password writes in a token's REVOKE_TOKEN_CLAIM.
PASSWORD_DIGEST = re.compile(r"[0-9A-F]{32}")
# user_of_token's default: Redis not asked yet.
NOT_LOOKED_UP = object()


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


def user_of_token(token: Token, *, looked_up: UserFacts | str | None | object = NOT_LOOKED_UP):
    """The active user a token belongs to, with the token not revoked; else 401. From the
    user's facts in Redis when it holds them (no query: accounts/user_facts.py), else from the
    database, whose answer then goes back to Redis under the lease Redis handed out.
    `looked_up`: what `user_facts_lookup` answered, when the caller asked Redis already (in a
    round trip of its own)."""
    user_id = token_user_id(token)
    if looked_up is NOT_LOOKED_UP:
        looked_up = user_facts_lookup(user_id)
    if isinstance(looked_up, UserFacts):
        check_token(token, looked_up)
        return user_from_facts(looked_up)
    read_at = time.time()
    user_model = get_user_model()
    # get(), not filter().first(): first() adds an ORDER BY whose compiling cost every
    # authenticated request about 0.11 ms of CPU, most of what version 2 had added to the
    # baseline (docs/measurements/2026-11-30-shopper-list-and-baseline.md).
    try:
        user = user_model.objects.select_related("token_generation").get(  # a LEFT JOIN
            **{api_settings.USER_ID_FIELD: user_id}
        )
    except user_model.DoesNotExist:
        token_refused(USER_NOT_FOUND)
    facts = facts_of(user)
    if isinstance(looked_up, str):
        user_facts_remember(facts, lease=looked_up, read_at=read_at)
    check_token(token, facts)
    return user


def token_user_id(token: Token) -> int:
    """The user id the token names; InvalidToken (401) when it names none we could issue."""
    user_id = user_id_from_claim(token.payload.get(api_settings.USER_ID_CLAIM))
    if user_id is None:
        raise InvalidToken("Token contained no recognizable user identification")
    return user_id


# Why a token is refused once its user is read: also what the claim's procedure signals when
# it reads the user itself (coupons/issuing/procedure.py).
USER_NOT_FOUND, USER_INACTIVE, TOKEN_REVOKED = "user not found", "user inactive", "token revoked"


@dataclass(frozen=True)
class TokenClaims:
    """What a token says its user must be: of this password digest and token generation."""

    password_digest: str
    generation: int


def token_claims(token: Token) -> TokenClaims:
    """The token's claims as the rule compares them: a digest as simplejwt writes it and a
    generation that is a non-negative integer the column can hold (absent: 0); 401 (revoked)
    for anything else, so that no looser comparison (a collation that folds case or pads
    spaces, a string turned into a number) is ever asked to judge it."""
    digest = token.payload.get(api_settings.REVOKE_TOKEN_CLAIM)
    generation = token.payload.get(TOKEN_GENERATION_CLAIM, 0)
    if not isinstance(digest, str) or PASSWORD_DIGEST.fullmatch(digest) is None:
        token_refused(TOKEN_REVOKED)
    if type(generation) is not int or not 0 <= generation <= MAX_TOKEN_GENERATION:
        token_refused(TOKEN_REVOKED)
    return TokenClaims(password_digest=digest, generation=generation)


def token_refusal(facts: UserFacts | None, claims: TokenClaims) -> str | None:
    """The rule that a token is still honoured, once: its user exists, is active, and has the
    password and token generation the token was issued under. Why not (None: it is)."""
    if facts is None:
        return USER_NOT_FOUND
    if not facts.is_active:
        return USER_INACTIVE
    if (facts.password_digest, facts.generation) != (claims.password_digest, claims.generation):
        return TOKEN_REVOKED
    return None


def token_holds_sql(*, password: str, generation: str, digest: str, token_generation: str) -> str:
    """token_refusal's last comparison in SQL, for the claim's procedure (decision 1016), with
    the SQL names of the user's password hash and token generation and of the token's claims
    (validated by token_claims first). Compared as bytes: no collation folds case or pads."""
    return (
        f"CAST(UPPER(MD5({password})) AS BINARY) = CAST({digest} AS BINARY)"
        f" AND COALESCE({generation}, 0) = {token_generation}"
    )


def check_token(token: Token, facts: UserFacts) -> None:
    """401 unless the user is active and the token of its current password and generation."""
    if not facts.is_active:  # said first, whatever the token carries
        token_refused(USER_INACTIVE)
    refusal = token_refusal(facts, token_claims(token))
    if refusal is not None:
        token_refused(refusal)


def token_refused(reason: str) -> NoReturn:
    """The 401 for `reason` (one of the three above)."""
    if reason == USER_NOT_FOUND:
        raise AuthenticationFailed(_("User not found"), code="user_not_found")
    if reason == USER_INACTIVE:
        raise AuthenticationFailed(_("User is inactive"), code="user_inactive")
    raise AuthenticationFailed(_("The token was revoked."), code="token_revoked")


@dataclass(frozen=True)
class TokenCheck:
    """What a token says its user must be, for a write that reads the user itself in its own
    round trip (the claim's CALL, decision 1016) instead of authentication reading it first:
    active, with this password digest and token generation."""

    user_id: int
    claims: TokenClaims

    @classmethod
    def of(cls, token: Token, user_id: int) -> "TokenCheck":
        """401 at once for claims the rule could never accept (token_claims)."""
        return cls(user_id=user_id, claims=token_claims(token))


@dataclass(frozen=True)
class TokenBearer:
    """A request's token whose signature and expiry passed, its user not checked yet: the
    claim checks it in round trips it makes anyway (decisions 1013, 1016), through these two
    steps, called in this order."""

    token: Token
    user_id: int

    def facts_read(self) -> ScriptCall:
        """The read of the user's facts, to ride along a round trip to the cache's Redis."""
        return user_facts_read_call(self.user_id)

    def check(
        self, reply: list | None, *, asked: bool, the_write_may_check: bool
    ) -> "TokenCheck | None":
        """401 unless the token is honoured, judged on what Redis answered the facts read
        (`reply`; None: Redis did not answer; `asked` False: it was not sent, so Redis is
        asked now). When Redis lacks the facts and `the_write_may_check`, nothing is read
        here: the TokenCheck returned is the write's to make. Else returns None."""
        if not asked:
            user_of_token(self.token)
            return None
        looked_up = None if reply is None else user_facts_of_reply(self.user_id, reply)
        if isinstance(looked_up, str) and the_write_may_check:
            return TokenCheck.of(self.token, self.user_id)
        if isinstance(looked_up, UserFacts):
            check_token(self.token, looked_up)  # the claim needs no User built from them
        else:
            user_of_token(self.token, looked_up=looked_up)
        return None


def token_check_in_database(check: TokenCheck) -> None:
    """The check made by a query, where the write cannot make it (401 when it fails)."""
    user_model = get_user_model()
    user = user_model.objects.select_related("token_generation").filter(pk=check.user_id).first()
    refusal = token_refusal(None if user is None else facts_of(user), check.claims)
    if refusal is not None:
        token_refused(refusal)


def facts_of(user) -> UserFacts:
    """What authentication keeps of a user loaded with its token generation."""
    return UserFacts(
        user_id=user.pk,
        is_active=user.is_active,
        generation=token_generation_of(user),
        password_digest=get_md5_hash_password(user.password),
        username=user.get_username(),
        is_staff=user.is_staff,
        is_superuser=user.is_superuser,
    )


def user_facts_load(user_ids: list[int]) -> None:
    """Put the facts of these users in Redis from one database read, as a login does for its
    user (best effort: a user whose facts are missing is looked up on its next request)."""
    looked_up = {user_id: user_facts_lookup(user_id) for user_id in user_ids}
    leases = {user_id: lease for user_id, lease in looked_up.items() if isinstance(lease, str)}
    if not leases:
        return
    read_at = time.time()
    users = get_user_model().objects.select_related("token_generation").filter(pk__in=leases)
    for user in users:
        user_facts_remember(facts_of(user), lease=leases[user.pk], read_at=read_at)


def token_generation_of(user) -> int:
    """The user's token generation (accounts.models.TokenGeneration): 0 until a first
    deactivation. Costs no query when the user was loaded with select_related."""
    try:
        return user.token_generation.generation
    except TokenGeneration.DoesNotExist:
        return 0


class RevocableJWTAuthentication(JWTAuthentication):
    """simplejwt's authentication with user_of_token's checks (no query when Redis holds the
    user's facts, one otherwise). A token's signature is checked once per process: a token
    seen before is taken from `signature_checked` while it has not expired (its revocation is
    asked of the user's facts on every request, as for any token)."""

    def get_validated_token(self, raw_token: bytes) -> Token:
        token = signature_checked(raw_token)
        if token.payload.get("exp", 0) > time.time():
            return token
        return super().get_validated_token(raw_token)  # simplejwt's own 401 for an expired one

    def get_user(self, validated_token: Token):
        return user_of_token(validated_token)


# Tokens whose signature was checked, most recently used kept: a shopper's clicks during a
# sale send the same token (each costs about 36 us to validate; decision 1013).
SIGNATURE_CHECKED_KEPT = 4096


@functools.lru_cache(maxsize=SIGNATURE_CHECKED_KEPT)
def signature_checked(raw_token: bytes) -> Token:
    """simplejwt's validation of a raw access token (signature, expiry, type), remembered; a
    token it refuses raises, and is not remembered."""
    return JWTAuthentication.get_validated_token(JWTAuthentication(), raw_token)


class LoginSerializer(TokenObtainPairSerializer):
    """simplejwt's login, with a username that must be a JSON string (DRF's CharField logs
    `12345` in as "12345", past the login throttle, which counts only strings), and tokens
    stamped with the user's token generation (a refresh copies it into the new pair)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields[self.username_field] = StringField(write_only=True)

    def validate(self, attrs: dict) -> dict:
        data = super().validate(attrs)
        if self.user is not None:  # set by the validation that passed
            user_facts_load([self.user.pk])  # its next requests are authenticated with no query
        return data

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
    match_subclasses = True  # the claim's own (coupons/api/claim_authentication.py) too


class LoginSerializerSchema(TokenObtainPairSerializerExtension):
    """The login's request and answer in the API schema, as for simplejwt's own serializer
    (the extension matches only that exact class)."""

    target_class = "accounts.authentication.LoginSerializer"
