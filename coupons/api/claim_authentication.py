"""The claim's authentication: the user's facts read in the same Redis round trip as the
claim's screen (SPEC section 24: a claim refused in Redis costs one round trip).

A claim without an Idempotency-Key asks Redis both things at once, the user's facts and
the screen, once the token's signature and expiry have passed (no I/O), and keeps the
screen's answer on the request for the view. A claim with a key is authenticated first and
screened later, as before: the key's record must be found (and its answer replayed) before
anything is counted. Where the counter's Redis is not the cache's (a Redis Cluster, another
server) the two are asked one after the other.

When Redis does not hold the user's facts and the screen found room, the user is not read
here: the decision's one call reads it and refuses (401) a token its user no longer honours
(decision 1016), so a cold user's win is one round trip to the database, not two.

A token that then fails the facts (revoked, inactive) is 401, but its claim was counted
against the user's claim rate: only a token we signed for that user gets that far."""

from rest_framework.request import Request

from accounts.authentication import (
    RevocableJWTAuthentication,
    TokenCheck,
    token_user_id,
    user_of_token,
)
from accounts.user_facts import user_facts_of_reply, user_facts_read_call, user_known_by_id
from api.idempotency import KEY_HEADER
from coupons import issuing

# Where the view finds the screen's answer on a request this authentication screened, and the
# check of the user it left to the decision's call.
SCREENED_ATTRIBUTE = "claim_screened"
TOKEN_CHECK_ATTRIBUTE = "claim_token_check"


class ClaimScreeningAuthentication(RevocableJWTAuthentication):
    def authenticate(self, request: Request):
        header = self.get_header(request)
        raw_token = None if header is None else self.get_raw_token(header)
        if raw_token is None:
            return None
        token = self.get_validated_token(raw_token)
        if request.headers.get(KEY_HEADER) is not None:
            return self.get_user(token), token
        user_id = token_user_id(token)
        template_id = request.parser_context["kwargs"]["template_id"]
        screened = issuing.claim_screen(
            template_id=template_id, user_id=user_id, ride_along=user_facts_read_call(user_id)
        )
        setattr(request, SCREENED_ATTRIBUTE, screened)
        if not screened.along_sent:  # the counter's Redis is not the cache's: ask it apart
            return user_of_token(token), token
        reply = screened.along_reply  # None: Redis did not answer, so the database decides
        looked_up = None if reply is None else user_facts_of_reply(user_id, reply)
        if (
            isinstance(looked_up, str)  # Redis does not hold the user
            and screened.may_have_room
            and issuing.decided_in_the_server()
        ):
            # The decision's one call reads the user itself (decision 1016): no query here.
            setattr(request, TOKEN_CHECK_ATTRIBUTE, TokenCheck.of(token, user_id))
            return user_known_by_id(user_id), token
        return user_of_token(token, looked_up=looked_up), token
