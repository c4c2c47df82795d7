"""A Redis that goes back in time (a snapshot restored, a lagging replica promoted, a restart
that lost its last writes) serves facts from before changes it had forgotten. The epoch watch
(coupons/issuing/reconcile.py EpochWatch, every second) finds it behind the database and
forgets every user's facts there: after one watch no token a change revoked is honoured, and
no request answers 500 in between (decision 1018)."""

import pytest
from django_redis import get_redis_connection

from api.throttles import backoff as throttle_backoff
from coupons.issuing.reconcile import coupon_counters_follow_the_database as watch
from coupons.models import UserCoupon
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.helpers import claim_url, use_counter_at
from tests.support.user_changes import advance_generation, change_password, deactivate, demote

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.servers]


def delete(user) -> None:
    user.delete()


CHANGES = [deactivate, change_password, advance_generation, demote, delete]


def answers(clients: dict, template) -> dict[str, tuple[int, int, int]]:
    """Per change: what its user's old token gets from auth/me, the staff API and a claim."""
    return {
        name: (
            client.get("/api/auth/me").status_code,
            client.get("/api/admin/coupons").status_code,
            client.post(claim_url(template)).status_code,
        )
        for name, client in clients.items()
    }


def restore_snapshot(own_redis, prefix: str) -> None:
    """Redis back as its dump.rdb had it (SAVE wrote it; the server keeps nothing else), and
    the app's clients reconnected to it."""
    own_redis.stop()
    own_redis.start()  # loads dump.rdb from its directory
    get_redis_connection("default").connection_pool.disconnect()
    use_counter_at(own_redis.url, prefix=prefix)
    throttle_backoff.reset()


def test_a_redis_restored_from_before_the_changes_honours_none_of_them_after_one_watch(
    own_redis, redis_namespace
):
    # given: five superusers whose facts Redis holds, and a snapshot of that Redis
    users = {change.__name__: UserFactory(is_superuser=True) for change in CHANGES}
    clients = {name: bearer_client(user) for name, user in users.items()}
    template = CouponTemplateFactory(total=100, per_user_limit=10)
    assert all(client.get("/api/auth/me").status_code == 200 for client in clients.values())
    for _ in range(3):
        assert watch() is None
    own_redis.client().save()
    assert watch() is None  # time goes on after the snapshot

    # when: each user changes (Redis confirms every forget), then the snapshot comes back
    for change in CHANGES:
        change(users[change.__name__])
    refused = answers(clients, template)
    restore_snapshot(own_redis, redis_namespace)
    served_from_the_snapshot = clients["deactivate"].get("/api/auth/me").status_code
    during = answers(clients, template)
    line = watch()
    after = answers(clients, template)

    # then: before the watch the snapshot's facts are served (the window the watch bounds),
    # never a 500; after it, every old token is refused as it was before the restore
    assert served_from_the_snapshot == 200
    assert all(500 not in codes for codes in during.values()), during
    assert line is not None and "forgot the cached facts of" in line
    assert after == refused
    assert refused == {
        "deactivate": (401, 401, 401),
        "change_password": (401, 401, 401),
        "advance_generation": (401, 401, 401),
        "demote": (200, 403, 201),  # still a shopper, no longer staff
        "delete": (401, 401, 401),
    }
    assert not UserCoupon.objects.filter(user_id=users["delete"].pk).exists()


def test_a_redis_that_lost_its_epoch_is_new_to_the_watch(own_redis):
    """Flushed, or a replica promoted before it had the key: whatever it holds is forgotten."""
    for _ in range(2):
        assert watch() is None
    own_redis.client().flushall()

    line = watch()

    assert line is not None and "Another timeline (database epoch 2; cache Redis 0" in line
    assert watch() is None


def test_a_second_watcher_behind_by_one_raise_is_not_a_new_redis():
    """Two schedulers: one may commit the next epoch before the other raised Redis to its
    own; neither reads that as a Redis gone back."""
    from coupons.issuing.reconcile import EpochWatch

    first, second = EpochWatch(), EpochWatch()

    assert [first(), second(), first(), second(), first()] == [None] * 5
