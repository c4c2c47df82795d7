"""Helpers shared by test modules (fixtures stay in conftest.py)."""

from coupons.counter import CouponCounter, coupon_counter, install_coupon_counter, redis_client


def claim_url(template) -> str:
    return f"/api/coupons/{template.pk}/claim"


def counter_at(url: str, *, prefix: str = "", backoff: float = 5.0) -> CouponCounter:
    """A counter on a plain Redis at `url`, with the app's claim timeout."""
    return CouponCounter(
        redis_client(url, cluster=False, timeout=0.25), prefix=prefix, backoff=backoff
    )


def use_counter_at(url: str, *, prefix: str, backoff: float = 5.0) -> CouponCounter:
    """Make a counter on `url` the app's (the autouse fixture puts the usual one back)."""
    counter = counter_at(url, prefix=prefix, backoff=backoff)
    install_coupon_counter(counter)
    return counter


def redis_counts(template_id: int, user_id: int) -> list[int | None]:
    """claimed, peruser, version, peruser-version as the app's counter stores them."""
    stored = coupon_counter().stored(template_id=template_id, user_id=user_id)
    return [stored.claimed, stored.user, stored.version, stored.user_version]


def statement_waits(like: str) -> bool:
    """Whether a statement matching the SQL LIKE pattern is running on the database now (an
    idle lock holder leaves only a waiting statement to find)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE %s", [like]
        )
        return cursor.fetchone()[0] > 0
