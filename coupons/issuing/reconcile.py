"""Redis's counts kept at or below the database's (SPEC section 21; docs/decisions/
0721-redis-facts-cannot-outlive-their-template.md): the scheduled reconcile lowers what a
database restored from an older backup left above it, and the rebuild resets every template.

Lowering is always safe: Redis never admits a claim, so a count below the database's only
sends more claims to the database, which decides; a count above it refuses claims that have
room. Neither ever raises a count: the claims record what the database showed (sync.lua)."""

from collections.abc import Iterator

from django.db import transaction
from django.db.models import Count

from accounts.user_facts import (
    user_facts_epoch,
    user_facts_epoch_key,
    user_facts_epoch_raise,
    user_facts_forget_all,
)
from core import clock
from coupons.errors import TemplateNotFound
from coupons.issuing.counter import per_user_ttl_ms
from coupons.issuing.counter_setup import coupon_counter
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.counter_epoch import CounterEpoch

# Users per database read and per Redis script while reconciling.
BATCH = 1000


def coupon_counters_reconcile() -> str:
    """Lower every count Redis holds above the database's, for each template in its claim
    window (outside it a claim is refused on the window, whatever the counts). The job
    `manage.py run_scheduler` runs every COUPON_COUNTER_RECONCILE_SECONDS. Raises when Redis
    fails (the scheduler logs it and retries next time)."""
    counter = coupon_counter()
    now = clock.now()
    in_window = {
        template_id: (incarnation, claimed)
        for template_id, incarnation, claimed in CouponTemplate.objects.filter(
            valid_from__lte=now, valid_until__gte=now
        ).values_list("pk", "incarnation", "claimed_count")
    }
    held = counter.user_counts_held(
        {template_id: incarnation for template_id, (incarnation, _) in in_window.items()}
    )
    lowered = 0
    for template_id, (incarnation, claimed) in in_window.items():
        users = list(held.get(template_id, {}))
        for batch in list(_batches(users)) or [[]]:
            lowered += counter.lower(
                template_id=template_id,
                incarnation=incarnation,
                claimed=claimed,
                users=_database_counts(template_id, batch),
            )
    return f"Reconciled the Redis counts of {len(in_window)} template(s): {lowered} lowered."


def _batches(items: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


def _database_counts(template_id: int, users: list[int]) -> dict[int, int]:
    """Each user's coupons of the template (0 for none)."""
    counted = dict(
        UserCoupon.objects.filter(template_id=template_id, user_id__in=users)
        .values("user_id")
        .annotate(held=Count("id"))
        .values_list("user_id", "held")
    )
    return {user: counted.get(user, 0) for user in users}


def coupon_counters_rebuild(*, template_id: int) -> int:
    """Reset one template's Redis facts to the database: the confirmed claimed count is set to
    claimed_count, per-user counts (and those of other incarnations of the id) and the cached
    terms are dropped (each comes back from the database on the next claim). Returns the
    claimed_count written. Raises when Redis is unreachable."""
    template = (
        CouponTemplate.objects.filter(pk=template_id)
        .values_list("incarnation", "claimed_count", "valid_until")
        .first()
    )
    if template is None:
        raise TemplateNotFound()
    incarnation, claimed, valid_until = template
    coupon_counter().rebuild_template(
        template_id=template_id,
        incarnation=incarnation,
        db_claimed=claimed,
        ttl_ms=per_user_ttl_ms(now=clock.now(), valid_until=valid_until),
    )
    return claimed


def coupon_counters_forget_unknown() -> list[int]:
    """Drop the Redis facts of every template id the database does not hold (templates a
    restore took away, or deleted): returns those ids. Raises when Redis is unreachable."""
    counter = coupon_counter()
    held = counter.template_ids_held()
    known = set(CouponTemplate.objects.filter(pk__in=held).values_list("pk", flat=True))
    unknown = sorted(held - known)
    for template_id in unknown:
        counter.forget_template(template_id=template_id)
    return unknown


class EpochWatch:
    """The scheduler's watch of both timelines, every COUPON_COUNTER_EPOCH_SECONDS
    (docs/decisions/1018-a-redis-behind-is-a-new-redis.md): raise the database's epoch by one
    (committed), then each Redis's to it (the counter's and the cache's, which may be two
    servers), only ever upward.

    - A Redis holding a higher epoch than the database: the database went back in time
      (restored from a backup, or a failover lost commits Redis had seen).
    - A Redis holding a lower one than this watch wrote there, or than the database had before
      this run's raise, or none: that Redis went back in time (a snapshot restored, a lagging
      replica promoted, a restart that lost its last writes), and may again hold facts of
      before changes it had forgotten: a user deactivated, a password changed.

    Either way the facts there are reset to the database's (every template's counts and
    terms, every user's facts) and the epochs raised past both, so no copy from another
    timeline outlives one watch. Raises when Redis fails (the scheduler logs it and watches
    again)."""

    def __init__(self) -> None:
        self.written: dict[str, int] = {}  # what this watch last wrote, by Redis key

    def __call__(self) -> str | None:
        counter = coupon_counter()
        with transaction.atomic():
            row, _ = CounterEpoch.objects.select_for_update().get_or_create(pk=CounterEpoch.ROW_ID)
            held = {"counter": counter.epoch() or 0, "cache": user_facts_epoch() or 0}
            keys = {"counter": counter.epoch_key(), "cache": user_facts_epoch_key()}
            before = row.epoch
            row.epoch = max(before, *held.values()) + 1
            row.save(update_fields=["epoch"])
        database_back = any(value > before for value in held.values())
        # A second watcher may have committed the epoch before and not yet raised Redis's.
        floor = {name: max(self.written.get(keys[name], 0), before - 1) for name in held}
        redis_back = {name for name in held if held[name] < floor[name]}
        lines = []
        if database_back or "counter" in redis_back:
            lines.append(self._reset_counts())
        if database_back or "cache" in redis_back:
            lines.append(f"forgot the cached facts of {user_facts_forget_all()} user(s)")
        counter.epoch_raise(row.epoch)
        user_facts_epoch_raise(row.epoch)
        self.written.update({keys["counter"]: row.epoch, keys["cache"]: row.epoch})
        if not lines:
            return None
        timelines = ", ".join(f"{name} Redis {held[name]}" for name in sorted(held))
        return (
            f"Another timeline (database epoch {before}; {timelines}): a restore or a promoted"
            f" replica? {'; '.join(lines)}; every epoch now {row.epoch}."
        )

    @staticmethod
    def _reset_counts() -> str:
        template_ids = list(CouponTemplate.objects.order_by("pk").values_list("pk", flat=True))
        for template_id in template_ids:
            try:
                coupon_counters_rebuild(template_id=template_id)
            except TemplateNotFound:  # deleted meanwhile
                pass
        forgotten = coupon_counters_forget_unknown()
        return f"reset the Redis facts of {len(template_ids)} template(s), dropped {len(forgotten)}"


coupon_counters_follow_the_database = EpochWatch()
