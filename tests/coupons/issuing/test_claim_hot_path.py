"""The claim's hot path (SPEC section 15): refusals answered from Redis on facts the database
confirmed, with no database statement; a 201 in few statements and two Redis round trips;
staff changes that make room take effect before they return, whatever Redis does; and the
claim stays exact through a flush, a stop or a stall of Redis in the middle of a storm."""

import os
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection

from coupons.issuing import steps
from coupons.issuing.counter import CouponCounter
from coupons.issuing.counter_setup import coupon_counter
from coupons.models import UserCoupon
from coupons.services import templates
from tests.support.claims import claim, publish, sell_out
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import UserFactory
from tests.support.helpers import claim_url, redis_counts, statements_made_by, use_counter_at

pytestmark = pytest.mark.django_db(transaction=True)


def assert_exact(template, issued: int) -> None:
    template.refresh_from_db()
    assert template.claimed_count == issued
    assert UserCoupon.objects.filter(template=template).count() == issued


# --- What reaches the database ---------------------------------------------------------------


def statements_beyond_authentication(user, path: str, method: str = "post") -> dict[str, int]:
    """The statements a request sends beyond those `GET /api/auth/me` (authentication
    alone) sends, read from the database server's counters for this connection. The user has
    made a request before, so its facts are in Redis (and authentication sends none)."""
    client = bearer_client(user)
    assert client.get("/api/auth/me").status_code == 200
    baseline = statements_made_by(lambda: client.get("/api/auth/me"))
    made = statements_made_by(lambda: getattr(client, method)(path))
    return {
        name: made.get(name, 0) - baseline.get(name, 0)
        for name in set(made) | set(baseline)
        if made.get(name, 0) != baseline.get(name, 0)
    }


def test_a_sold_out_refusal_with_the_facts_in_redis_makes_no_database_statement():
    template = publish(total=2)
    sell_out(template)
    user = UserFactory()

    extra = statements_beyond_authentication(user, claim_url(template))

    assert extra == {}
    assert claim(user, template) == (409, "sold_out")


def test_limit_and_window_refusals_with_the_facts_in_redis_make_no_database_statement(
    frozen_now,
):
    template = publish(total=10, per_user_limit=1)
    holder = UserFactory()
    assert claim(holder, template)[0] == 201
    assert statements_beyond_authentication(holder, claim_url(template)) == {}
    assert claim(holder, template) == (409, "limit_reached")

    frozen_now(template.valid_until + timedelta(milliseconds=1))
    newcomer = UserFactory()
    assert statements_beyond_authentication(newcomer, claim_url(template)) == {}
    assert claim(newcomer, template) == (409, "not_in_window")


def test_a_throttled_claim_makes_no_database_statement_and_counts_per_template(
    settings, frozen_now
):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "claim": "2/min"}
    first, second = publish(total=10, per_user_limit=10), publish(total=10, per_user_limit=10)
    user = UserFactory()
    client = bearer_client(user)
    assert [client.post(claim_url(first)).status_code for _ in range(2)] == [201, 201]

    extra = statements_beyond_authentication(user, claim_url(first))
    over = client.post(claim_url(first), HTTP_IDEMPOTENCY_KEY="retry-me")

    assert extra == {}
    assert (over.status_code, over.json()["code"]) == (429, "throttled")
    assert 1 <= int(over["Retry-After"]) <= 60
    # Its keys are in the template's cluster slot: the rate is per user and template.
    assert client.post(claim_url(second)).status_code == 201
    assert_exact(first, 2)
    # A 429 did nothing, so it is not kept as the key's answer: the retry runs.
    frozen_now(frozen_now.now() + timedelta(minutes=1))
    retried = client.post(claim_url(first), HTTP_IDEMPOTENCY_KEY="retry-me")
    assert retried.status_code == 201
    assert_exact(first, 3)


@pytest.mark.servers
def test_a_successful_claim_is_one_call_and_two_redis_round_trips(own_redis):
    template = publish(total=100)
    warm = UserFactory()
    assert claim(warm, template)[0] == 201  # scripts loaded, connection open
    user = UserFactory()
    redis = own_redis.client()
    redis.config_resetstat()

    extra = statements_beyond_authentication(user, claim_url(template))

    # One CALL on the decision connection (out of autocommit): the procedure runs the guarded
    # UPDATE, the INSERT, COMMIT and the SELECT of its answer, which the server counts as well
    # (docs/decisions/0700-claim-decision-in-one-call.md).
    assert extra == {
        "Questions": 1,
        "Com_call_procedure": 1,
        "Com_update": 1,
        "Com_insert_select": 1,
        "Com_commit": 1,
        "Com_select": 1,
    }
    calls = {name: stats["calls"] for name, stats in redis.info("commandstats").items()}
    # The screen and the record (the commands inside them are counted as well); the rest are
    # authentication's user facts, in the same Redis here: the first /me misses and writes
    # them back (2), the second /me and the claim read them (1 each).
    assert calls["cmdstat_evalsha"] == 2 + 4
    assert not {"cmdstat_eval", "cmdstat_script|load"} & set(calls)
    assert UserCoupon.objects.filter(user=user, template=template).count() == 1
    assert redis_counts(template.pk, user.pk) == [2, 1]


def test_a_hidden_template_is_not_found_from_the_cached_terms_too():
    template = publish(visibility="hidden", code="HIDDEN-1")
    assert coupon_counter().stored_terms(template_id=template.pk) is not None
    assert claim(UserFactory(), template) == (404, "not_found")


# --- Staff changes that make room take effect before they return -------------------------


def test_a_raised_total_admits_the_next_claim_while_refusals_storm():
    """Claims hammer a sold-out template (answered from Redis, or from the database while the
    terms are fenced out) while staff raise the total five times; after each raise returns, a
    new user's claim is judged on the new total. The hammering users are at their limit, so
    they never take the room a raise makes."""
    template = publish(total=2, per_user_limit=1)
    holders = sell_out(template)
    stop = threading.Event()
    hammer_answers: list[tuple[int, str | None]] = []

    def hammer() -> None:
        users = holders
        try:
            while not stop.is_set():
                for user in users:
                    hammer_answers.append(claim(user, template))
        finally:
            connection.close()

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for total in range(3, 8):
            templates.coupon_template_edit(template_id=template.pk, changes={"total": total})
            assert claim(UserFactory(), template) == (201, None), total
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    assert_exact(template, 7)
    assert set(hammer_answers) <= {(409, "sold_out"), (409, "limit_reached")}
    assert len(hammer_answers) > 10


def test_a_raised_per_user_limit_admits_the_users_next_claim():
    template = publish(total=10, per_user_limit=1)
    user = UserFactory()
    assert claim(user, template) == (201, None)
    assert claim(user, template) == (409, "limit_reached")  # from Redis

    templates.coupon_template_edit(template_id=template.pk, changes={"per_user_limit": 2})

    assert claim(user, template) == (201, None)
    assert claim(user, template) == (409, "limit_reached")


def test_a_moved_window_admits_the_next_claim(frozen_now):
    template = publish(total=10)
    frozen_now(template.valid_until + timedelta(minutes=1))
    assert claim(UserFactory(), template) == (409, "not_in_window")  # from Redis

    templates.coupon_template_edit(
        template_id=template.pk, changes={"valid_until": template.valid_until + timedelta(hours=1)}
    )

    assert claim(UserFactory(), template) == (201, None)


class StalledFactsRead:
    """Makes the claims of one user stall right after their database read of the template (the
    read the claim writes back to Redis), until released."""

    def __init__(self, monkeypatch, user_id: int):
        self.read = threading.Event()
        self.release = threading.Event()
        real = steps.claim_facts

        def stalled(*, template_id: int, user_id: int):
            facts = real(template_id=template_id, user_id=user_id)
            if user_id == self.user_id:
                self.read.set()
                assert self.release.wait(timeout=30)
            return facts

        self.user_id = user_id
        monkeypatch.setattr(steps, "claim_facts", stalled)


@pytest.mark.parametrize("publish_confirmed", [True, False])
def test_a_claim_that_read_the_old_terms_cannot_cache_them_after_the_raise(
    monkeypatch, publish_confirmed
):
    """A claim reads the sold-out row, then stalls; staff raise the total and the call
    returns; the stalled claim then tries to write the old terms back. The fence set before
    the raise committed refuses them, also when Redis did not confirm the publish after it
    (then the raise waits out the lease, and the lease the claim holds is still valid)."""
    template = publish(total=1)
    sell_out(template)
    counter = coupon_counter()
    counter.client.delete(counter.terms_keys(template.pk)[0])  # terms missing: the claim reads
    counter.terms_lease = 1.0
    slow = UserFactory()
    stall = StalledFactsRead(monkeypatch, slow.pk)
    if not publish_confirmed:
        monkeypatch.setattr(CouponCounter, "publish", lambda self, terms, **read: False)
    answers = []

    def claim_slowly() -> None:
        try:
            answers.append(claim(slow, template))
        finally:
            connection.close()

    stalled = threading.Thread(target=claim_slowly)
    stalled.start()
    assert stall.read.wait(timeout=30)

    started = time.monotonic()
    templates.coupon_template_edit(template_id=template.pk, changes={"total": 3})
    edit_took = time.monotonic() - started
    stall.release.set()
    stalled.join()

    assert answers == [(409, "sold_out")]  # true when it read the row
    assert claim(UserFactory(), template) == (201, None)
    assert claim(UserFactory(), template) == (201, None)
    assert claim(UserFactory(), template) == (409, "sold_out")
    assert (edit_took >= counter.terms_lease) is not publish_confirmed
    assert_exact(template, 3)


@pytest.mark.servers
def test_a_raise_while_redis_is_unreachable_returns_once_the_cached_terms_expired(
    own_redis, redis_namespace
):
    counter = use_counter_at(own_redis.url, prefix=redis_namespace, terms_lease=1.0)
    template = publish(total=1)
    sell_out(template)
    assert claim(UserFactory(), template) == (409, "sold_out")  # cached, from Redis
    use_counter_at("redis://127.0.0.1:1/0", prefix=redis_namespace, terms_lease=1.0)

    started = time.monotonic()
    templates.coupon_template_edit(template_id=template.pk, changes={"total": 2})
    edit_took = time.monotonic() - started

    assert edit_took >= counter.terms_lease
    # Redis is back with what it held before the raise: nothing of it may refuse now.
    use_counter_at(own_redis.url, prefix=redis_namespace, terms_lease=1.0)
    assert claim(UserFactory(), template) == (201, None)
    assert claim(UserFactory(), template) == (409, "sold_out")
    assert_exact(template, 2)


def test_a_deleted_template_is_not_found_although_its_terms_were_cached():
    template = publish(total=5)
    assert coupon_counter().stored_terms(template_id=template.pk) is not None

    templates.coupon_template_delete(template_id=template.pk)

    assert coupon_counter().stored_terms(template_id=template.pk) is None
    assert claim(UserFactory(), template) == (404, "not_found")


# --- Redis failing in the middle of a storm ---------------------------------------------------


def storm(template, users, *, during=None) -> list[int]:
    """Every user claims twice at once; `during` runs in another thread meanwhile."""
    actions = [lambda user=user: claim(user, template)[0] for user in users * 2]
    side = threading.Thread(target=during) if during else None
    if side:
        side.start()
    try:
        return run_together(actions)
    finally:
        if side:
            side.join()


@pytest.mark.servers
def test_flushall_mid_storm_stays_exact(own_redis):
    template = publish(total=15, per_user_limit=2)
    users = UserFactory.create_batch(20)
    redis = own_redis.client()

    def flush_repeatedly() -> None:
        for _ in range(20):
            redis.flushall()
            time.sleep(0.01)

    statuses = storm(template, users, during=flush_repeatedly)

    assert sorted(statuses) == [201] * 15 + [409] * 25
    assert_exact(template, 15)
    assert claim(UserFactory(), template) == (409, "sold_out")


@pytest.mark.servers
def test_redis_stopped_mid_storm_stays_exact(own_redis):
    template = publish(total=15, per_user_limit=2)
    users = UserFactory.create_batch(20)

    def stop_soon() -> None:
        time.sleep(0.05)
        own_redis.stop()

    statuses = storm(template, users, during=stop_soon)

    assert sorted(statuses) == [201] * 15 + [409] * 25
    assert_exact(template, 15)


@pytest.mark.servers
def test_a_stalled_redis_mid_storm_stays_exact(own_redis):
    """SIGSTOP: Redis accepts and answers nothing for a second, then comes back; claims time
    out on it (250 ms), back off to the database path, and stay exact."""
    template = publish(total=15, per_user_limit=2)
    users = UserFactory.create_batch(20)

    def stall() -> None:
        time.sleep(0.02)
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        time.sleep(1.0)
        os.kill(own_redis.process.pid, signal.SIGCONT)

    started = time.monotonic()
    statuses = storm(template, users, during=stall)

    assert sorted(statuses) == [201] * 15 + [409] * 25
    assert_exact(template, 15)
    assert time.monotonic() - started < 20
