"""Throttles on who is calling: logins (API and Django admin) and token refresh (SPEC
sections 12 and 19).

A login attempt counts in three buckets at once, and a login that succeeds gives its count
back, so what they count is failures:

- per (account, client IP), `login_username_ip`, 10 a minute: the lockout a guesser meets;
- per account, `login_username`, 100 a minute: a ceiling on guessing from many addresses, high
  enough that one address (which meets its own lockout after 10) cannot lock the account for
  its owner elsewhere;
- per client IP, `login_ip`, 300 a minute: a ceiling on one address trying many accounts,
  high enough that a shared address (a NAT) does not lock out its users who never logged in
  there.

An attempt from an address the account logged in from before (accounts/known_addresses.py)
counts in the first bucket only: the ceilings, which many addresses or one shared address can
fill, do not lock the owner out there (decision 0632).

An attempt the first bucket refuses is counted in none of them (api/lua/throttle_take.lua). The
account is the one the database resolves the username to, as the door's own field hands it to
authentication, so every spelling that logs in to it (case, accents, zero-width and other
characters its collation ignores, surrounding spaces, compatibility forms such as Arabic
ligatures) shares its buckets. While Redis is away the three are counted in this process."""

import hashlib
import unicodedata
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UsernameField
from django.http import HttpRequest
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.throttling import BaseThrottle
from rest_framework_simplejwt.exceptions import TokenBackendError, TokenError
from rest_framework_simplejwt.settings import api_settings as jwt_settings
from rest_framework_simplejwt.state import token_backend
from rest_framework_simplejwt.tokens import RefreshToken

from accounts.authentication import user_id_from_claim, user_of_token
from accounts.known_addresses import address_known, address_remember
from api.serializers import StringField
from api.throttles import (
    Bucket,
    ScopedThrottle,
    Taken,
    client_ip,
    throttle_refund,
    throttle_take,
)

# Characters a MySQL/MariaDB *_ci collation ignores or folds away; removed from a username
# that matches no account before it is hashed (one that matches is counted by its account).
# Cc/Cf: control and format characters (zero-width space, word joiner, BOM...); M*: marks.
IGNORED_CATEGORIES = frozenset({"Cc", "Cf", "Mn", "Mc", "Me"})


def username_as_the_api_authenticates(username: str) -> str:
    """What POST /api/auth/token hands to authentication: its own field's cleaning (trimmed,
    nothing else). Not NFKC: `ali\ufc5ece` logs in as alice, its NFKC form does not."""
    return StringField().to_internal_value(username)


def username_as_the_admin_authenticates(username: str) -> str:
    """What the Django admin's login form hands to authentication: its UsernameField's
    cleaning (trimmed, then NFKC unless longer than the column)."""
    User = get_user_model()
    max_length = getattr(User._meta.get_field(User.USERNAME_FIELD), "max_length", None)
    return str(UsernameField(max_length=max_length).to_python(username))


def username_folded(username: str) -> str:
    """A username compared as the database collation compares it: format, control and
    combining characters dropped, accents stripped, case folded, spaces trimmed."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", username))
    kept = "".join(c for c in decomposed if unicodedata.category(c) not in IGNORED_CATEGORIES)
    return " ".join(kept.casefold().split())


def login_account(entered: str) -> str:
    """The identity the per-account buckets count: the account this username (as the door
    hands it to authentication) logs in to, as the database's collation resolves it (one
    indexed read, the lookup ModelBackend makes), or for a username with no account its
    folded form. Hashed: bounded length, nothing readable in Redis."""
    User = get_user_model()
    account_id = (
        User._default_manager.filter(**{User.USERNAME_FIELD: entered})
        .values_list("pk", flat=True)
        .first()
    )
    if account_id is not None:
        return f"user-{account_id}"
    return name_digest(entered)


def name_digest(entered: str) -> str:
    """A username as a bucket names it: folded as the database compares names, then hashed."""
    return "name-" + hashlib.sha256(username_folded(entered).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class LoginAttempt:
    """One counted login attempt: `wait` is None when it may go on to the password check."""

    taken: Taken
    account: str
    ip: str

    @property
    def wait(self) -> float | None:
        return self.taken.wait

    def succeeded(self) -> None:
        """The password was right: this attempt was no failure, give its count back, and the
        address is now one the account logged in from."""
        throttle_refund(self.taken)
        address_remember(self.account, self.ip)


def login_attempt_begin(*, username: str, ip: str) -> LoginAttempt:
    """Count a login attempt in the three login buckets (or, over a limit, in none); from an
    address the account logged in from before, in its (account, address) bucket only.
    `username` is as the door hands it to authentication."""
    account = login_account(username)
    pair = hashlib.sha256(f"{account}|{ip}".encode()).hexdigest()[:32]
    buckets = [Bucket("login_username_ip", pair)]
    if not (account.startswith("user-") and address_known(account, ip)):
        buckets += [Bucket("login_username", account), Bucket("login_ip", ip)]
    return LoginAttempt(throttle_take(buckets, bounds_guessing=True), account=account, ip=ip)


def login_attempt_of(request: HttpRequest, username: str) -> LoginAttempt:
    return login_attempt_begin(username=username, ip=client_ip(request))


def username_posted(request) -> str | None:
    """The username a login or a sign-up posts, when it is a string (anything else is the
    view's 400, counted nowhere)."""
    data = request.data
    username = data.get(get_user_model().USERNAME_FIELD) if hasattr(data, "get") else None
    return username if isinstance(username, str) else None


class LoginThrottle(BaseThrottle):
    """POST /api/auth/token. A username that is not a string is not counted: the view refuses
    it with 400 before any password is checked. The view gives the count back on success."""

    def allow_request(self, request, view) -> bool:
        username = username_posted(request)
        if username is None:
            self._wait = None
            return True
        view.login_attempt = login_attempt_of(request, username_as_the_api_authenticates(username))
        self._wait = view.login_attempt.wait
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class RegisterThrottle(BaseThrottle):
    """POST /api/auth/register: every attempt counts per client address (`register_ip`) and per
    name tried, folded as the database compares names (`register_username`), both or neither;
    counted in this process while Redis is away, since a registration's answer says whether a
    name is taken (decision 1026). A username that is not a string is refused with 400 before
    anything else and not counted."""

    def allow_request(self, request, view) -> bool:
        username = username_posted(request)
        if username is None:
            self._wait = None
            return True
        buckets = [
            Bucket("register_ip", client_ip(request)),
            Bucket("register_username", name_digest(username)),
        ]
        self._wait = throttle_take(buckets, bounds_guessing=True).wait
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class RefreshThrottle(ScopedThrottle):
    """POST /api/auth/token/refresh, per user (30 a minute). Only a live token counts against
    its user: anyone can write a user_id into an unsigned one, and a dead one (blacklisted by
    a refresh or a logout, revoked, its user inactive or gone) is no longer its user's to
    spend; dead tokens count per client address instead (decision 0633)."""

    scope = "refresh"

    def identity(self, request, view) -> str | None:
        data = request.data
        token = data.get("refresh") if hasattr(data, "get") else None
        if not isinstance(token, str):
            return None
        try:
            # decode takes the encoded JWT (a str, as jwt.decode does); simplejwt's own
            # annotation names its Token class.
            payload = token_backend.decode(token, verify=True)  # type: ignore[arg-type]
        except TokenBackendError:
            return None  # answered 401 by the view, counted nowhere
        user_id = user_id_from_claim(payload.get(jwt_settings.USER_ID_CLAIM))
        if user_id is None:
            return None
        if not refresh_token_alive(token):
            return f"dead-from-{client_ip(request)}"
        return str(user_id)


def refresh_token_alive(token: str) -> bool:
    """The checks the refresh itself makes (unexpired, not blacklisted, of an active user, not
    revoked), on a token whose signature is ours: two indexed reads."""
    try:
        # RefreshToken takes the encoded JWT (a str); simplejwt annotates its Token class.
        user_of_token(RefreshToken(token))  # type: ignore[arg-type]
    except (TokenError, AuthenticationFailed):
        return False
    return True
