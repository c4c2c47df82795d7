"""Helpers shared by test modules (fixtures stay in conftest.py)."""

from coupons.issuing.counter import CouponCounter
from coupons.issuing.counter_setup import coupon_counter, install_coupon_counter, redis_client


def claim_url(template) -> str:
    return f"/api/coupons/{template.pk}/claim"


def counter_at(
    url: str, *, prefix: str = "", backoff: float = 5.0, terms_lease: float = 5.0
) -> CouponCounter:
    """A counter on a plain Redis at `url`, with the app's claim timeout."""
    return CouponCounter(
        redis_client(url, cluster=False, timeout=0.25),
        prefix=prefix,
        backoff=backoff,
        terms_lease=terms_lease,
    )


def use_counter_at(
    url: str, *, prefix: str, backoff: float = 5.0, terms_lease: float = 5.0
) -> CouponCounter:
    """Make a counter on `url` the app's (the autouse fixture puts the usual one back)."""
    counter = counter_at(url, prefix=prefix, backoff=backoff, terms_lease=terms_lease)
    install_coupon_counter(counter)
    return counter


def redis_counts(template_id: int, user_id: int) -> list[int | None]:
    """The confirmed claimed count and user count as the app's counter stores them."""
    from coupons.models import CouponTemplate

    incarnation = CouponTemplate.objects.values_list("incarnation", flat=True).get(pk=template_id)
    stored = coupon_counter().stored(
        template_id=template_id, incarnation=incarnation, user_id=user_id
    )
    return [stored.claimed, stored.user]


SESSION_STATUS_SQL = (
    "SHOW SESSION STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%%'"
)


def statements_made_by(action) -> dict[str, int]:
    """The statements `action` sent on this thread's database connections (the default one
    and the decision's), as the server counted them (each session's counters: Questions, and
    each Com_* that moved), without the reads of the counters themselves. The action must not
    reconnect."""
    from collections import Counter

    from django.db import connections

    def status(connection) -> Counter:
        with connection.cursor() as cursor:
            cursor.execute(SESSION_STATUS_SQL)
            return Counter({name: int(value) for name, value in cursor.fetchall()})

    from core.read_routing import REPLICA

    sessions = [connections[alias] for alias in connections if alias != REPLICA]
    for connection in sessions:
        connection.ensure_connection()
    thread_ids = [connection.connection.thread_id() for connection in sessions]
    before = [status(connection) for connection in sessions]
    action()
    made: Counter = Counter()
    for connection, thread_id, counted in zip(sessions, thread_ids, before, strict=True):
        after = status(connection)
        assert connection.connection.thread_id() == thread_id, "the action reconnected"
        after.subtract(counted)
        after["Questions"] -= 1  # the SHOW that read `after`
        after["Com_show_status"] -= 1
        made.update(after)
    return dict(+made)
