"""The claim's Redis round trips (SPEC section 24): a claim without an Idempotency-Key reads
the user's facts in the screen's round trip, so a refusal is one round trip and no statement,
and a win one round trip before the decision, the CALL, and one after. Counted by the app's
own round-trip timer (core/metrics.py: a pipeline is one round trip, as on the wire) and by
the database server's counters."""

import pytest
from django.contrib.auth.hashers import make_password
from django.core.cache import caches
from django.db import OperationalError, connection
from django_redis import get_redis_connection
from rest_framework.test import APIClient
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import AccessToken
from rest_framework_simplejwt.utils import get_md5_hash_password

from accounts.authentication import TOKEN_REVOKED, TokenCheck, TokenClaims
from accounts.models import TokenGeneration
from accounts.user_facts import user_facts_forget
from core.metrics import redis_round_trip_seconds
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.procedure import CALL_DECIDE_SQL, PROCEDURE_PARAMETERS, SIGNALLED
from coupons.models import UserCoupon
from coupons.models.campaigns import Campaign
from tests.support.campaigns import a_campaign
from tests.support.claims import claim, publish, sell_out
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url, statements_made_by

pytestmark = pytest.mark.django_db(transaction=True)
REVOKE = api_settings.REVOKE_TOKEN_CLAIM


def redis_round_trips() -> float:
    """How many Redis round trips this process has timed so far."""
    for metric in redis_round_trip_seconds.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count"):
                return sample.value
    raise AssertionError("no round-trip count")


def work_of(action) -> tuple[float, int]:
    """(Redis round trips, database statements) of `action`."""
    before = redis_round_trips()
    made = statements_made_by(action)
    return redis_round_trips() - before, made.get("Questions", 0)


def warm_client(user):
    """The user's client, after a request that put its facts in Redis."""
    client = bearer_client(user)
    assert client.get("/api/auth/me").status_code == 200
    return client


def test_a_warm_refusal_is_one_redis_round_trip_and_no_statement():
    template = publish(total=2)
    sell_out(template)
    client = warm_client(UserFactory())

    answers = []
    round_trips, statements = work_of(lambda: answers.append(client.post(claim_url(template))))

    assert answers[0].json()["code"] == "sold_out"
    assert (round_trips, statements) == (1, 0)


def test_a_warm_win_is_one_round_trip_before_the_call_and_one_after():
    template = publish(total=10)
    assert claim(UserFactory(), template)[0] == 201  # the terms in Redis
    client = warm_client(UserFactory())

    answers = []
    round_trips, statements = work_of(lambda: answers.append(client.post(claim_url(template))))

    assert answers[0].status_code == 201
    assert (round_trips, statements) == (2, 1)  # screen + facts; the record after; the CALL


def test_a_claim_with_an_idempotency_key_is_authenticated_before_it_is_screened():
    """The key's record is looked up before anything is counted: the facts apart."""
    template = publish(total=2)
    sell_out(template)
    client = warm_client(UserFactory())

    answers = []
    round_trips, _ = work_of(
        lambda: answers.append(client.post(claim_url(template), HTTP_IDEMPOTENCY_KEY="k-1"))
    )

    assert answers[0].json()["code"] == "sold_out"
    # The facts, the screen, and the rate of refusals kept as a key's answer (api/idempotency.py).
    assert round_trips == 3


def test_a_deactivated_user_is_refused_401_although_the_screen_was_asked():
    template = publish(total=10)
    user = UserFactory()
    client = warm_client(user)
    user.is_active = False
    user.save()
    user_facts_forget(user.pk)  # what the account's change does (accounts/user_facts.py)

    response = client.post(claim_url(template))

    assert response.status_code == 401
    assert not UserCoupon.objects.filter(template=template).exists()


@pytest.mark.servers
def test_a_counter_apart_from_the_cache_reads_the_facts_in_a_round_trip_of_their_own(own_redis):
    template = publish(total=2)
    sell_out(template)
    client = warm_client(UserFactory())

    answers = []
    round_trips, statements = work_of(lambda: answers.append(client.post(claim_url(template))))

    assert answers[0].json()["code"] == "sold_out"
    assert (round_trips, statements) == (2, 0)


@pytest.mark.servers
def test_after_a_script_flush_each_call_of_the_round_trip_runs_once(own_redis, settings):
    """NOSCRIPT answers without running: the call is sent again with its script, alone."""
    coupon_counter().shares_cache_redis = True  # own_redis is the cache's Redis too
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "claim": "2/min"}
    template = publish(total=10, per_user_limit=10)
    client = warm_client(UserFactory())
    assert client.post(claim_url(template)).status_code == 201

    own_redis.client().script_flush()
    second = client.post(claim_url(template))
    third = client.post(claim_url(template))

    # Counted once each: the third is the one over 2 a minute.
    assert [second.status_code, third.status_code] == [201, 429]
    assert UserCoupon.objects.filter(template=template).count() == 2


# --- A user Redis does not hold: the decision's one call reads it (decision 1016) -------------


def cold(user) -> None:
    """Redis no longer holds the user's facts (they expired), the database unchanged."""
    get_redis_connection("default").delete(caches["default"].make_key(f"user-facts:{user.pk}"))


def test_a_cold_win_is_the_call_alone_with_no_read_of_the_user():
    template = publish(total=10)
    assert claim(UserFactory(), template)[0] == 201  # the terms in Redis
    user = UserFactory()
    client = warm_client(user)
    cold(user)

    answers = []
    round_trips, statements = work_of(lambda: answers.append(client.post(claim_url(template))))

    assert answers[0].status_code == 201
    assert (round_trips, statements) == (2, 1)  # screen + facts (missing); the record; the CALL


def deactivate_quietly(user) -> None:
    type(user).objects.filter(pk=user.pk).update(is_active=False)  # no signal: Redis not told


def change_password_quietly(user) -> None:
    type(user).objects.filter(pk=user.pk).update(password=make_password("another-one"))


def delete_quietly(user) -> None:
    UserCoupon.objects.filter(user=user).delete()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM auth_user WHERE id = %s", [user.pk])


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (deactivate_quietly, "User is inactive"),
        (change_password_quietly, "The token was revoked."),
        (
            lambda user: TokenGeneration.objects.create(user=user, generation=1),
            "The token was revoked.",
        ),
        (delete_quietly, "User not found"),
    ],
)
def test_the_call_refuses_a_token_its_cold_user_no_longer_honours(change, detail):
    """The same answers authentication gives when it reads the user (accounts/authentication.py)."""
    template = publish(total=10)
    assert claim(UserFactory(), template)[0] == 201
    user = UserFactory()
    client = warm_client(user)
    cold(user)
    change(user)

    response = client.post(claim_url(template))

    assert (response.status_code, response.json()["detail"]) == (401, detail)
    template.refresh_from_db()
    assert template.claimed_count == 1
    assert UserCoupon.objects.filter(template=template).count() == 1


def test_a_refusal_before_the_call_is_told_only_to_a_token_its_cold_user_honours():
    """The spent budget refuses before the decision's call: the user is read then (401)."""
    template = publish(total=10)
    assert claim(UserFactory(), template)[0] == 201
    campaign = a_campaign(500, template)
    Campaign.objects.filter(pk=campaign.pk).update(spent=500)
    honoured, revoked = UserFactory(), UserFactory()
    clients = {user: warm_client(user) for user in (honoured, revoked)}
    for user in (honoured, revoked):
        cold(user)
    deactivate_quietly(revoked)

    assert clients[honoured].post(claim_url(template)).json()["code"] == "budget_exhausted"
    refused = clients[revoked].post(claim_url(template))
    assert (refused.status_code, refused.json()["detail"]) == (401, "User is inactive")


# --- Tokens signed with the key but carrying claims the rule never issued -----------------------


def forged(user, claim_name: str, value) -> str:
    """A token for `user` signed with the project's key, one claim changed."""
    token = AccessToken.for_user(user)
    token[claim_name] = value
    return str(token)


def digest_of(user) -> str:
    return get_md5_hash_password(user.password)


FORGERIES = {
    "generation as a string": lambda user: forged(user, "gen", "0"),
    "generation below zero": lambda user: forged(user, "gen", -1),
    "generation past the column": lambda user: forged(user, "gen", 2**40),
    "generation true": lambda user: forged(user, "gen", True),
    "digest in lower case": lambda user: forged(user, REVOKE, digest_of(user).lower()),
    "digest with a trailing space": lambda user: forged(user, REVOKE, digest_of(user) + " "),
    "digest as a number": lambda user: forged(user, REVOKE, 12345),
}


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_claim_is_refused_the_same_way_warm_and_cold(forgery, warm):
    """Python's check and the procedure's are one rule (accounts/authentication.py
    token_claims, token_refusal, token_holds_sql): byte for byte, the generation an integer."""
    template = publish(total=10)
    assert claim(UserFactory(), template)[0] == 201  # the terms in Redis
    user = UserFactory()
    warm_client(user)
    if not warm:
        cold(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {FORGERIES[forgery](user)}")

    response = client.post(claim_url(template))

    assert (response.status_code, response.json()["detail"]) == (401, "The token was revoked.")
    assert UserCoupon.objects.filter(user=user).count() == 0


def test_the_procedure_compares_the_digest_as_bytes():
    """Past the Python checks: the call itself refuses a digest in lower case (the column's
    collation folded case), by the error number it signals for a revoked token."""
    if connection.vendor != "mysql":
        pytest.skip("only MySQL/MariaDB has the procedure")
    user = UserFactory()
    check = TokenCheck(
        user_id=user.pk, claims=TokenClaims(password_digest=digest_of(user).lower(), generation=0)
    )
    values = {name: None for name in PROCEDURE_PARAMETERS}
    values.update(user_id=user.pk, token_digest=check.claims.password_digest, token_generation=0)

    with connection.cursor() as cursor, pytest.raises(OperationalError) as refused:
        cursor.execute(CALL_DECIDE_SQL, [values[name] for name in PROCEDURE_PARAMETERS])

    assert refused.value.args[0] == SIGNALLED[TOKEN_REVOKED]
