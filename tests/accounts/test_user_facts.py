"""Authentication from facts in Redis that the database confirmed (SPEC section 21; decision
0720): no statement once Redis holds a user's facts, a change of the user forgets them before
and after its commit, a lookup that read the user before a change writes nothing back, and
with Redis away the database answers as before."""

import threading
import time
from datetime import timedelta

import pytest
import redis
from django.contrib.auth.models import Permission
from django.core.cache import caches
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_redis import get_redis_connection
from rest_framework.test import APIClient

from accounts.authentication import facts_of, user_facts_load
from accounts.models import TokenGeneration, UserFactsToForget
from accounts.user_facts import (
    NOTES_SETTLE_SECONDS,
    UserFacts,
    user_facts_change,
    user_facts_forget_noted,
    user_facts_lookup,
    user_facts_remember,
    user_from_facts,
)
from api.throttles import backoff as throttle_backoff
from core import clock
from coupons.services import templates
from localservers.waiting import wait_until
from ops.management.commands.run_scheduler import run_every
from tests.support.caches import cache_settings
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url, statements_made_by
from tests.support.user_changes import advance_generation, change_password, deactivate

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pass-word-123"
INACTIVE, REVOKED, NOT_FOUND = "User is inactive", "The token was revoked.", "User not found"


def me(client: APIClient) -> tuple[int, str | None]:
    answer = client.get("/api/auth/me")
    return answer.status_code, answer.json().get("detail")


def cached(user) -> UserFacts | None:
    facts = user_facts_lookup(user.pk)
    return facts if isinstance(facts, UserFacts) else None


def test_me_and_a_sold_out_refusal_make_no_statement_once_redis_holds_the_user():
    now = clock.now()
    template = templates.coupon_template_publish(
        name="Gone", type="direct", value=500, total=1,
        valid_from=now - timedelta(hours=1), valid_until=now + timedelta(hours=1),
    )  # fmt: skip
    assert bearer_client(UserFactory()).post(claim_url(template)).status_code == 201
    client = bearer_client(UserFactory())
    assert client.post(claim_url(template)).status_code == 409  # the facts are recorded

    answered = statements_made_by(lambda: client.get("/api/auth/me"))
    refused = statements_made_by(lambda: client.post(claim_url(template)))

    assert answered == {}
    assert refused == {}
    assert client.post(claim_url(template)).json()["code"] == "sold_out"


def test_the_first_request_looks_the_user_up_once_and_writes_the_facts_back(user):
    client = bearer_client(user)
    with CaptureQueriesContext(connection) as first:
        assert me(client)[0] == 200
    with CaptureQueriesContext(connection) as second:
        answer = client.get("/api/auth/me")

    assert len(first.captured_queries) == 1
    assert second.captured_queries == []
    assert answer.json() == {"id": user.pk, "username": user.username, "is_staff": False}
    assert cached(user) == facts_of(type(user).objects.get(pk=user.pk))


def test_a_login_puts_the_facts_in_redis():
    user = UserFactory(password=PASSWORD)
    tokens = (
        APIClient()
        .post("/api/auth/token", {"username": user.username, "password": PASSWORD}, format="json")
        .json()
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens['access']}")

    assert statements_made_by(lambda: client.get("/api/auth/me")) == {}


def make_staff(user) -> None:
    user.is_staff = True
    user.save(update_fields=["is_staff"])


def rename(user) -> None:
    user.username = f"{user.username}-renamed"
    user.save()


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (deactivate, (401, INACTIVE)),
        (change_password, (401, REVOKED)),
        (advance_generation, (401, REVOKED)),
        (lambda user: user.delete(), (401, NOT_FOUND)),
    ],
)
def test_a_user_held_active_in_redis_is_refused_right_after_the_change_commits(change, refusal):
    user = UserFactory()
    client = bearer_client(user)
    assert me(client)[0] == 200
    assert cached(user).is_active

    change(user)

    assert me(client) == refusal


@pytest.mark.parametrize("change", [make_staff, rename])
def test_what_me_answers_from_redis_follows_a_change(change):
    user = UserFactory()
    client = bearer_client(user)
    assert me(client)[0] == 200

    change(user)

    answer = client.get("/api/auth/me").json()
    assert (answer["username"], answer["is_staff"]) == (user.username, user.is_staff)


def test_a_save_that_changes_no_fact_keeps_them(user):
    client = bearer_client(user)
    assert me(client)[0] == 200
    user.first_name = "Renamed"
    user.save()
    user.save(update_fields=["last_login"])

    assert cached(user) is not None


def test_a_lookup_that_read_the_user_before_a_deactivation_writes_nothing_back(user):
    lease = user_facts_lookup(user.pk)  # a request misses...
    assert isinstance(lease, str)
    read_before = facts_of(type(user).objects.select_related("token_generation").get(pk=user.pk))
    deactivate(user)  # ...the deactivation commits while it reads...
    user_facts_remember(read_before, lease=lease, read_at=clock.now().timestamp())  # ...late

    assert cached(user) is None
    assert me(bearer_client(user)) == (401, INACTIVE)


def test_a_lookup_that_began_after_the_change_writes_back(user):
    deactivate(user)
    assert me(bearer_client(user)) == (401, INACTIVE)
    assert cached(user).is_active is False  # the refusal too is answered from Redis next


def test_a_write_outside_save_is_wrapped_by_user_facts_change(user):
    client = bearer_client(user)
    assert me(client)[0] == 200
    with user_facts_change(user.pk):
        type(user).objects.filter(pk=user.pk).update(is_active=False)

    assert me(client) == (401, INACTIVE)


def test_load_writes_the_facts_of_many_users_in_one_read():
    users = UserFactory.create_batch(3)
    TokenGeneration.objects.create(user=users[0], generation=2)
    with CaptureQueriesContext(connection) as read:
        user_facts_load([user.pk for user in users])

    assert len(read.captured_queries) == 1
    assert [cached(user).generation for user in users] == [2, 0, 0]


def test_a_user_from_the_facts_loads_what_else_a_view_asks_for():
    """A staff view checks permissions with the user built from Redis: the row's other fields
    and the permissions come from the database as for any User."""
    staff = UserFactory(is_staff=True, email="staff@example.com")
    staff.user_permissions.add(Permission.objects.get(codename="view_coupontemplate"))
    client = bearer_client(staff)
    assert me(client)[0] == 200
    built = user_from_facts(cached(staff))
    with CaptureQueriesContext(connection) as loads:
        assert built.email == "staff@example.com"
        assert built.has_perm("coupons.view_coupontemplate")
    assert built == staff and isinstance(built, type(staff))
    assert len(loads.captured_queries) >= 1
    assert client.get("/api/admin/coupons").status_code == 200


# --- Redis away --------------------------------------------------------------------------------


def test_the_facts_live_user_facts_ttl_from_the_read(user, settings):
    """Long enough that a sale's clicks find them: minutes, not the lease's seconds."""
    assert me(bearer_client(user))[0] == 200  # looked up, written back
    key = caches["default"].make_key(f"user-facts:{user.pk}")

    left = get_redis_connection("default").pttl(key) / 1000

    assert settings.USER_FACTS_TTL - 5 < left <= settings.USER_FACTS_TTL
    assert settings.USER_FACTS_TTL >= 60 * settings.USER_FACTS_LEASE


def test_a_confirmed_change_leaves_no_note(user):
    deactivate(user)
    assert not UserFactsToForget.objects.exists()


@pytest.mark.servers
def test_with_redis_down_users_are_looked_up_in_the_database(own_redis, user):
    client = bearer_client(user)
    own_redis.stop()

    with CaptureQueriesContext(connection) as lookup:
        assert me(client)[0] == 200
    deactivate(user)  # Redis cannot confirm: returns at once, leaving its note

    assert len(lookup.captured_queries) == 1
    assert me(client) == (401, INACTIVE)
    assert UserFactsToForget.objects.filter(user_id=user.pk).exists()


def unreachable_cache_during(settings, change) -> None:
    """Run `change` while the cache's Redis cannot be reached, then reach it again."""
    reachable = settings.CACHES
    settings.CACHES = cache_settings(settings.CACHES, location="redis://127.0.0.1:1/0")
    try:
        change()
    finally:
        settings.CACHES = reachable
        throttle_backoff.reset()


def age_notes() -> None:
    """As if the notes were written before NOTES_SETTLE_SECONDS."""
    UserFactsToForget.objects.update(
        created_at=clock.now() - timedelta(seconds=NOTES_SETTLE_SECONDS + 1)
    )


@pytest.mark.servers
def test_a_change_redis_did_not_confirm_is_forgotten_by_the_scheduler_once_redis_answers(
    own_redis, settings, user
):
    client = bearer_client(user)
    assert me(client)[0] == 200  # Redis holds "active"

    unreachable_cache_during(settings, lambda: deactivate(user))

    # Until the scheduler's job runs, Redis still holds what it read before the change.
    assert cached(user).is_active
    assert user_facts_forget_noted() is None  # forgotten at once; the young note kept
    assert cached(user) is None
    assert me(client) == (401, INACTIVE)
    assert UserFactsToForget.objects.filter(user_id=user.pk).exists()
    age_notes()
    assert user_facts_forget_noted() is not None  # the settled note dropped
    assert not UserFactsToForget.objects.exists()


@pytest.mark.servers
def test_a_deactivation_while_redis_pauses_writes_refuses_the_token_within_2_s_after(
    own_redis, user
):
    """CLIENT PAUSE ... WRITE holds every write (and every script) until it ends, so the
    change's forgets time out and its note stays; after the pause Redis serves the facts of
    before the change again. The job, every second as the scheduler runs it and never behind
    the requests' back-off, forgets them within 2 s of the pause's end."""
    client = bearer_client(user)
    assert me(client)[0] == 200  # Redis holds "active"
    facts_key = caches["default"].make_key(f"user-facts:{user.pk}")
    pause_ms = 2000
    own_redis.client().execute_command("CLIENT", "PAUSE", pause_ms, "WRITE")
    paused_at = time.monotonic()
    deactivate(user)
    assert UserFactsToForget.objects.filter(user_id=user.pk).exists()
    stop = threading.Event()
    job = threading.Thread(
        target=run_every, args=(user_facts_forget_noted,), kwargs={"interval": 1, "stop": stop}
    )
    job.start()
    try:
        forgotten = wait_until(
            lambda: not own_redis.client().exists(facts_key) and time.monotonic(),
            timeout=10,
            what="the old facts to be forgotten",
            interval=0.02,
        )
    finally:
        stop.set()
        job.join()

    after_the_pause = forgotten - (paused_at + pause_ms / 1000)
    assert after_the_pause < 2, f"forgotten {after_the_pause:.2f} s after the pause ended"
    throttle_backoff.reset()  # as in a worker that did not make the change: Redis asked first
    assert me(client) == (401, INACTIVE)


@pytest.mark.servers
def test_the_scheduler_keeps_the_notes_while_redis_is_away(own_redis, settings, user):
    unreachable_cache_during(settings, lambda: deactivate(user))
    age_notes()
    own_redis.stop()

    with pytest.raises(redis.RedisError):  # the scheduler logs it and runs the job again
        user_facts_forget_noted()
    assert UserFactsToForget.objects.filter(user_id=user.pk).exists()


@pytest.mark.servers
def test_one_change_in_one_transaction_forgets_once(own_redis, settings, user, caplog):
    """The save and the token generation it advances both change the user's facts in one
    transaction: one forget after its commit, whose notes go together."""
    with caplog.at_level("WARNING", logger="accounts.user_facts"):
        unreachable_cache_during(settings, lambda: atomic_deactivate(user))

    unconfirmed = [r for r in caplog.records if "did not confirm" in r.getMessage()]
    assert len(unconfirmed) == 1
    notes = UserFactsToForget.objects.filter(user_id=user.pk).count()
    assert notes >= 2  # the save's and the generation's
    age_notes()
    user_facts_forget_noted()
    assert not UserFactsToForget.objects.exists()


def atomic_deactivate(user) -> None:
    with transaction.atomic():
        deactivate(user)
