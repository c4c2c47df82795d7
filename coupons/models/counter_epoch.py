"""The database's timeline as Redis last saw it, registered from coupons.models
(coupons/issuing/reconcile.py `coupon_counters_follow_the_database`)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class CounterEpoch(models.Model):
    """One row whose `epoch` the scheduler raises by one every COUPON_COUNTER_EPOCH_SECONDS,
    then writes to Redis. Redis never holds an epoch the database has not committed, so a
    database whose epoch is below Redis's went back in time: restored from a backup (or a
    failover lost commits Redis had seen), and every fact Redis holds may be from a future
    the database no longer has."""

    ROW_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=ROW_ID)
    epoch = models.BigIntegerField(default=0)

    class Meta:
        db_table = "coupon_counter_epoch"
        verbose_name = _("counter epoch")

    def __str__(self) -> str:
        return str(self.epoch)
