"""The Lua scripts (SPEC section 15), against a real Redis, through CouponCounter: the screen
refuses only on confirmed facts, counts rise only, cached terms are written only under the
current lease and fence."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from redis.crc import key_slot

from coupons.issuing.counter import FENCE_TTL_MS, PER_USER_KEYS_OUTLIVE_WINDOW_MS, CouponCounter
from coupons.issuing.screen_answers import (
    CachedTerms,
    CouponMayHaveRoom,
    CouponRefused,
    CouponTermsMissing,
    CouponThrottled,
    ScreenAnswer,
)
from tests.support.helpers import counter_at

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TEMPLATE = 42
INCARNATION = "a1b2c3d4e5f60718"
TERMS = CachedTerms(
    template_id=TEMPLATE,
    incarnation=INCARNATION,
    version=1_000,
    total=3,
    per_user_limit=2,
    valid_from=NOW - timedelta(hours=1),
    valid_until=NOW + timedelta(hours=1),
    row={"name": "spring"},
)


SOLD_OUT = CouponRefused(ScreenAnswer.SOLD_OUT)
LIMIT_REACHED = CouponRefused(ScreenAnswer.LIMIT_REACHED)
NOT_IN_WINDOW = CouponRefused(ScreenAnswer.NOT_IN_WINDOW)


@pytest.fixture
def counter(redis_namespace):
    return counter_at(settings.COUPON_COUNTER_REDIS_URL, prefix=redis_namespace)


def screen(counter: CouponCounter, *, user_id=7, now=NOW, limit=100, window=1):
    return counter.screen(
        template_id=TEMPLATE,
        user_id=user_id,
        now=now,
        throttle_limit=limit,
        window=window,
        throttle_period=60,
    )


def record(counter, *, user_id=7, db_claimed=None, db_user=None, **terms):
    return counter.record(
        template_id=TEMPLATE,
        incarnation=INCARNATION,
        user_id=user_id,
        db_claimed=db_claimed,
        db_user=db_user,
        now=NOW,
        valid_until=TERMS.valid_until,
        **terms,
    )


def cache_terms(counter, terms=TERMS) -> None:
    assert counter.publish(terms, read_at=time.time())


def stored(counter, user_id=7) -> list[int | None]:
    counts = counter.stored(template_id=TEMPLATE, incarnation=INCARNATION, user_id=user_id)
    return [counts.claimed, counts.user]


def test_without_terms_nothing_is_refused_and_a_lease_is_handed_out(counter):
    record(counter, db_claimed=3, db_user=2)  # counts that would refuse, but no terms

    first, second = screen(counter), screen(counter, user_id=8)

    assert isinstance(first, CouponTermsMissing)
    assert second == CouponTermsMissing(lease=first.lease)  # one lease


@pytest.mark.parametrize(
    ("claimed", "user", "now", "expected"),
    [
        (3, 0, NOW, SOLD_OUT),
        (2, 2, NOW, LIMIT_REACHED),
        (3, 2, TERMS.valid_until + timedelta(milliseconds=1), NOT_IN_WINDOW),
        (0, 0, TERMS.valid_from - timedelta(milliseconds=1), NOT_IN_WINDOW),
        (3, 2, TERMS.valid_from, SOLD_OUT),  # the window is inclusive
        (2, 2, TERMS.valid_until, LIMIT_REACHED),
    ],
)
def test_confirmed_facts_refuse_in_the_rules_order(counter, claimed, user, now, expected):
    cache_terms(counter)
    record(counter, db_claimed=claimed, db_user=user)

    assert screen(counter, now=now) == expected


def test_room_sends_the_claim_to_the_database_with_the_cached_row(counter):
    cache_terms(counter)
    record(counter, db_claimed=2, db_user=1)

    assert screen(counter) == CouponMayHaveRoom(row={"name": "spring"}, user_claims=1)
    assert screen(counter, user_id=8) == CouponMayHaveRoom(row={"name": "spring"}, user_claims=None)
    assert stored(counter) == [2, 1]  # the screen counts nothing


def test_counts_only_rise(counter):
    record(counter, db_claimed=5, db_user=2)
    record(counter, db_claimed=4, db_user=1)  # a late, older snapshot

    assert stored(counter) == [5, 2]
    record(counter, db_claimed=6)
    assert stored(counter) == [6, 2]


def test_the_throttle_counts_every_screen_in_its_window(counter):
    cache_terms(counter)
    record(counter, db_claimed=3)  # sold out: refusals count too

    answers = [screen(counter, limit=2) for _ in range(3)]

    assert answers == [SOLD_OUT, SOLD_OUT, CouponThrottled()]
    assert screen(counter, limit=2, window=2) == SOLD_OUT  # the next window
    assert screen(counter, user_id=8, limit=2) == SOLD_OUT  # another user


def test_a_claim_writes_back_the_terms_it_read_only_with_the_current_lease(counter):
    missing = screen(counter)
    assert record(counter, db_user=0, terms=TERMS, lease="not-the-lease", read_at=time.time())
    assert isinstance(screen(counter), CouponTermsMissing)

    record(counter, db_claimed=3, terms=TERMS, lease=missing.lease, read_at=time.time())

    assert screen(counter) == SOLD_OUT


def test_a_staff_change_fences_out_claims_that_read_the_old_row(counter):
    """A claim reads the old row (version 1000) while staff raise the total: the fence set
    before the change commits refuses its write-back, lease or not."""
    missing = screen(counter)
    assert counter.fence(template_id=TEMPLATE, version=TERMS.version + 1)
    again = screen(counter)  # a claim that misses after the fence, still reading the old row

    for lease in (missing.lease, again.lease):
        record(counter, db_claimed=3, terms=TERMS, lease=lease, read_at=time.time())
    assert isinstance(screen(counter), CouponTermsMissing)

    raised = CachedTerms(**{**TERMS.__dict__, "version": TERMS.version + 5, "total": 10})
    assert counter.publish(raised, read_at=time.time())
    assert isinstance(screen(counter), CouponMayHaveRoom)
    # A late write-back of the old row, even with a lease taken now, changes nothing.
    counter.record(
        template_id=TEMPLATE, incarnation=INCARNATION, user_id=7, db_claimed=3, db_user=None,
        now=NOW,
        valid_until=TERMS.valid_until, terms=TERMS, lease=again.lease, read_at=time.time(),
    )  # fmt: skip
    assert isinstance(screen(counter), CouponMayHaveRoom)


def test_an_older_publish_never_replaces_newer_terms(counter):
    newer = CachedTerms(**{**TERMS.__dict__, "version": TERMS.version + 5, "total": 10})
    record(counter, db_claimed=3)
    assert counter.publish(newer, read_at=time.time())

    counter.publish(TERMS, read_at=time.time())  # a slower, earlier edit's publish

    assert isinstance(screen(counter), CouponMayHaveRoom)


def test_cached_terms_expire_a_lease_after_the_read_they_came_from(counter):
    long_ago = time.time() - counter.terms_lease - 1
    counter.publish(TERMS, read_at=long_ago)
    missing = screen(counter)
    record(counter, db_claimed=3, terms=TERMS, lease=missing.lease, read_at=long_ago)

    assert isinstance(screen(counter), CouponTermsMissing)
    ttl = counter.client.pttl(counter.terms_keys(TEMPLATE)[0])
    assert ttl == -2  # no key: expired on arrival

    cache_terms(counter)
    assert 0 < counter.client.pttl(counter.terms_keys(TEMPLATE)[0]) <= counter.terms_lease * 1000


def test_all_keys_of_a_template_share_one_cluster_slot(counter):
    keys = [
        *counter.count_keys(42, INCARNATION, 7),
        *counter.count_keys(42, "another", 99_999),
        *counter.terms_keys(42),
        counter.throttle_key(42, 7, 123),
        counter.throttle_key(42, 8, 124),
    ]
    assert len({key_slot(key.encode()) for key in keys}) == 1
    assert key_slot(counter.count_keys(43, INCARNATION, 7)[0].encode()) != key_slot(
        keys[0].encode()
    )


def test_key_names():
    counter = counter_at(settings.COUPON_COUNTER_REDIS_URL)
    assert counter.count_keys(42, "a1b2", 7) == [
        "coupon:claimed:{42}:a1b2",
        "coupon:peruser:{42}:a1b2:7",
    ]
    assert counter.count_bases(42) == ["coupon:claimed:{42}:", "coupon:peruser:{42}:"]
    assert counter.terms_keys(42) == [
        "coupon:terms:{42}",
        "coupon:terms-lease:{42}",
        "coupon:terms-fence:{42}",
    ]
    assert counter.throttle_key(42, 7, 9) == "coupon:throttle:{42}:7:9"


@pytest.mark.servers
def test_scripts_reload_themselves_after_script_flush(own_redis):
    counter = counter_at(own_redis.url)
    cache_terms(counter)
    assert isinstance(screen(counter), CouponMayHaveRoom)

    own_redis.client().script_flush()

    assert isinstance(screen(counter), CouponMayHaveRoom)
    assert record(counter, db_claimed=0, db_user=0)
    assert counter.fence(template_id=TEMPLATE, version=2_000)


@pytest.mark.servers
def test_unreachable_redis_is_swallowed_and_backs_off(own_redis):
    counter = counter_at(own_redis.url, backoff=60)
    own_redis.stop()

    assert screen(counter) is None
    assert record(counter, db_claimed=0, db_user=0) is False
    assert counter.fence(template_id=TEMPLATE, version=2_000) is False
    own_redis.start()
    # Still inside the back-off: Redis is not even asked.
    assert screen(counter) is None
    assert counter.publish(TERMS, read_at=time.time()) is False
    assert own_redis.client().dbsize() == 0


def test_counts_expire_when_the_claim_window_ends(counter):
    """Memory follows live templates: the counts live until valid_until (by the app's clock,
    which the scripts are given) plus a minute."""
    record(counter, db_claimed=1, db_user=1)
    until_window_end_ms = (TERMS.valid_until - NOW) // timedelta(milliseconds=1)
    expected_ms = until_window_end_ms + PER_USER_KEYS_OUTLIVE_WINDOW_MS

    ttls = [counter.client.pttl(key) for key in counter.count_keys(TEMPLATE, INCARNATION, 7)]

    assert all(expected_ms - 5_000 < ttl <= expected_ms for ttl in ttls), ttls


def test_a_fence_lasts_a_minute(counter):
    """Long enough for every write-back of terms read before a change (each lands within a
    lease of its read); a fence a failed change left behind keeps the terms out no longer."""
    assert counter.fence(template_id=TEMPLATE, version=TERMS.version + 1)

    ttl = counter.client.pttl(counter.terms_keys(TEMPLATE)[2])

    assert FENCE_TTL_MS - 5_000 < ttl <= FENCE_TTL_MS
