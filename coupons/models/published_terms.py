"""The shopper list's version row (coupons/shopper_list.py), registered from coupons.models."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class PublishedTermsVersion(models.Model):
    """One row whose `version` changes (to a fresh random number) in the same transaction as
    every change to what the shopper list shows of a template's terms: publish, edit, delete
    (and pause / resume). The list keeps those terms in memory and reads this row in the one
    statement each request makes, so a change is seen by the next request of every process
    (coupons/shopper_list.py, docs/decisions/0220-shopper-list-terms-in-memory.md)."""

    ROW_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=ROW_ID)
    version = models.BigIntegerField()

    class Meta:
        db_table = "coupon_published_terms_version"
        verbose_name = _("published terms version")

    def __str__(self) -> str:
        return str(self.version)
