"""The Lua scripts, against a real Redis, through CouponCounter."""

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from redis.crc import key_slot

from coupons.counter import (
    PER_USER_KEYS_OUTLIVE_WINDOW_MS,
    ClaimTerms,
    CouponClaimed,
    CouponCounter,
    CouponLimitReached,
    CouponNotInWindow,
    CouponSoldOut,
)
from tests.support.helpers import counter_at

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TERMS = ClaimTerms(
    template_id=42,
    total=3,
    per_user_limit=2,
    valid_from=NOW - timedelta(hours=1),
    valid_until=NOW + timedelta(hours=1),
)


@pytest.fixture
def counter(redis_namespace):
    return counter_at(settings.COUPON_COUNTER_REDIS_URL, prefix=redis_namespace)


def stored(counter: CouponCounter, user_id: int = 7) -> list[int | None]:
    """claimed, peruser, version, peruser-version, as integers (None when missing)."""
    counts = counter.stored(template_id=TERMS.template_id, user_id=user_id)
    return [counts.claimed, counts.user, counts.version, counts.user_version]


def sync(counter, *, user_id=7, db_claimed, db_user, now=NOW) -> bool:
    return counter.sync(
        template_id=TERMS.template_id,
        user_id=user_id,
        db_claimed=db_claimed,
        db_user=db_user,
        now=now,
        valid_until=TERMS.valid_until,
    )


def claim(counter, *, user_id=7, now=NOW, db_claimed=0, db_user=0, terms=TERMS):
    return counter.claim(terms, user_id=user_id, now=now, db_claimed=db_claimed, db_user=db_user)


def test_claim_on_empty_redis_rebuilds_from_floors_and_counts(counter):
    assert claim(counter, db_claimed=1, db_user=0) == CouponClaimed()
    assert stored(counter) == [2, 1, 1, 0]


def test_sold_out_when_the_total_counter_reaches_total(counter):
    assert claim(counter, db_claimed=3) == CouponSoldOut()
    # Lifted to the floors, nothing incremented.
    assert stored(counter) == [3, None, 3, 0]


def test_limit_reached_when_the_user_counter_reaches_the_limit(counter):
    assert claim(counter, db_claimed=1, db_user=2) == CouponLimitReached()
    assert stored(counter) == [1, 2, 1, 2]


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (TERMS.valid_from - timedelta(milliseconds=1), CouponNotInWindow()),
        (TERMS.valid_from, CouponClaimed()),
        (TERMS.valid_until, CouponClaimed()),
        (TERMS.valid_until + timedelta(milliseconds=1), CouponNotInWindow()),
    ],
)
def test_window_is_inclusive_and_outside_it_nothing_is_written(counter, now, expected):
    assert claim(counter, now=now, db_claimed=1, db_user=1) == expected
    if expected == CouponNotInWindow():
        assert stored(counter) == [None, None, None, None]
    else:
        assert stored(counter) == [2, 2, 1, 1]


def test_stale_counters_are_lifted_to_the_database_floors(counter):
    assert claim(counter) == CouponClaimed()  # counters now 1, 1
    # Redis lost writes (say a failover): the database already has 2 claims, 1 of this user.
    assert claim(counter, db_claimed=2, db_user=1) == CouponClaimed()
    assert stored(counter) == [3, 2, 2, 1]


def test_counters_above_the_floor_are_kept_and_decide(counter):
    claim(counter, user_id=1)
    claim(counter, user_id=2)
    claim(counter, user_id=3)
    # The database still says 0 (the claims are in flight), but Redis has counted 3.
    assert claim(counter, user_id=4, db_claimed=0) == CouponSoldOut()


def test_sync_moves_a_counter_down_to_the_database_fact(counter):
    claim(counter)  # leaked INCR: the database then refused the claim
    assert stored(counter) == [1, 1, 0, 0]

    assert sync(counter, user_id=7, db_claimed=0, db_user=0)

    assert stored(counter) == [0, 0, 0, 0]


def test_sync_ignores_an_older_snapshot_of_the_total(counter):
    sync(counter, user_id=7, db_claimed=5, db_user=1)

    sync(counter, user_id=7, db_claimed=4, db_user=0)

    assert stored(counter) == [5, 1, 5, 1]


def test_a_late_total_snapshot_still_repairs_the_users_own_counter(counter):
    # User A's claim was refused at claimed_count 4; meanwhile user B's sync moved the total
    # version to 5. A's late snapshot is too old for the total but must still repair A.
    claim(
        counter,
        user_id=7,
        db_claimed=4,
        db_user=0,
        terms=TERMS.__class__(**{**TERMS.__dict__, "total": 10}),
    )
    sync(counter, user_id=8, db_claimed=5, db_user=1)

    sync(counter, user_id=7, db_claimed=4, db_user=0)

    assert stored(counter, user_id=7) == [5, 0, 5, 0]


def test_all_keys_of_a_template_share_one_cluster_slot(counter):
    keys = counter.keys(42, 7) + counter.keys(42, 99_999)
    assert len({key_slot(key.encode()) for key in keys}) == 1
    assert key_slot(counter.keys(43, 7)[0].encode()) != key_slot(keys[0].encode())


def test_key_names_match_the_specification():
    assert counter_at(settings.COUPON_COUNTER_REDIS_URL).keys(42, 7) == [
        "coupon:claimed:{42}",
        "coupon:peruser:{42}:7",
        "coupon:version:{42}",
        "coupon:peruser-version:{42}:7",
    ]


@pytest.mark.servers
def test_scripts_reload_themselves_after_script_flush(own_redis):
    counter = counter_at(own_redis.url)
    assert claim(counter) == CouponClaimed()

    own_redis.client().script_flush()

    assert claim(counter) == CouponClaimed()
    assert sync(counter, user_id=7, db_claimed=0, db_user=0)


@pytest.mark.servers
def test_unreachable_redis_is_swallowed_and_backs_off(own_redis):
    counter = counter_at(own_redis.url, backoff=60)
    own_redis.stop()

    assert claim(counter) is None
    assert sync(counter, user_id=7, db_claimed=0, db_user=0) is False
    own_redis.start()
    # Still inside the back-off: Redis is not even asked.
    assert claim(counter) is None
    assert own_redis.client().dbsize() == 0


def test_per_user_keys_expire_when_the_claim_window_ends(counter):
    """Memory follows live templates: both per-user keys live until valid_until (by the app's
    clock, which the scripts are given) plus a minute; the template's own keys stay."""
    claim(counter)
    user_key, user_version_key = counter.keys(TERMS.template_id, 7)[1::2]
    until_window_end_ms = (TERMS.valid_until - NOW) // timedelta(milliseconds=1)
    expected_ms = until_window_end_ms + PER_USER_KEYS_OUTLIVE_WINDOW_MS

    ttls = [counter.client.pttl(key) for key in (user_key, user_version_key)]

    assert all(expected_ms - 5_000 < ttl <= expected_ms for ttl in ttls), ttls
    assert [counter.client.pttl(key) for key in counter.keys(TERMS.template_id, 7)[0::2]] == [
        -1,
        -1,
    ]


def test_sync_after_the_window_leaves_per_user_keys_a_minute_to_live(counter):
    claim(counter)

    assert sync(counter, db_claimed=1, db_user=1, now=TERMS.valid_until + timedelta(hours=5))

    ttls = [counter.client.pttl(key) for key in counter.keys(TERMS.template_id, 7)[1::2]]
    assert all(
        PER_USER_KEYS_OUTLIVE_WINDOW_MS - 5_000 < t <= PER_USER_KEYS_OUTLIVE_WINDOW_MS for t in ttls
    )
