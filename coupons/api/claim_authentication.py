"""The claim's authentication: the token's signature and expiry (no I/O); its user is checked
by the claim itself, in round trips it makes anyway (SPEC section 24: a claim refused in Redis
costs one round trip), so the token goes on to the claim as a TokenBearer, in `request.auth`.

A claim with an Idempotency-Key is authenticated here in full, as any request is: the key's
record is the user's, and it is found (and its answer replayed) before anything is counted.

A token that then fails the facts (revoked, inactive) is 401, but its claim was counted
against the user's claim rate: only a token we signed for that user gets that far."""

from rest_framework.request import Request

from accounts.authentication import RevocableJWTAuthentication, TokenBearer, token_user_id
from accounts.user_facts import user_known_by_id
from api.idempotency import KEY_HEADER


class ClaimAuthentication(RevocableJWTAuthentication):
    def authenticate(self, request: Request):
        header = self.get_header(request)
        raw_token = None if header is None else self.get_raw_token(header)
        if raw_token is None:
            return None
        token = self.get_validated_token(raw_token)
        if request.headers.get(KEY_HEADER) is not None:
            return self.get_user(token), None
        user_id = token_user_id(token)
        return user_known_by_id(user_id), TokenBearer(token=token, user_id=user_id)
