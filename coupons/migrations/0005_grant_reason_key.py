"""Grant reasons compare after trimming, NFKC and case folding (SPEC section 19): a key column
holds the digest of the normalised reason and the unique index moves to it. Existing rows keep
their reason text as typed; each gets its key. Two grants of one template to one user whose
reasons were different before and are the same reason now (for example "Ｌａｔｅ" and "late")
are both kept: the later one's key is salted with its id, so no coupon is lost and the unique
index holds (docs/decisions/0325-grant-reasons-and-exports.md)."""

import hashlib
import unicodedata

from django.db import migrations, models


def reason_key(reason: str) -> str:
    """Frozen copy of coupons.grant_reasons.reason_key as of this migration."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", reason).casefold())
    return hashlib.sha256(folded.strip().encode("utf-8")).hexdigest()


def keys_fill(apps, schema_editor):
    UserCoupon = apps.get_model("coupons", "UserCoupon")
    seen: set[tuple[int, int, str]] = set()
    granted = (
        UserCoupon.objects.filter(grant_reason__isnull=False)
        .order_by("pk")
        .values_list("pk", "template_id", "user_id", "grant_reason")
    )
    for pk, template_id, user_id, reason in granted.iterator(chunk_size=2000):
        key = reason_key(reason)
        if (template_id, user_id, key) in seen:
            key = hashlib.sha256(f"{key}:kept-duplicate:{pk}".encode()).hexdigest()
        seen.add((template_id, user_id, key))
        UserCoupon.objects.filter(pk=pk).update(grant_reason_key=key)


class Migration(migrations.Migration):
    dependencies = [
        ("coupons", "0004_verbose_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="usercoupon",
            name="grant_reason_key",
            field=models.CharField(blank=True, editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(keys_fill, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="usercoupon",
            name="user_coupon_one_grant_per_reason",
        ),
        migrations.AddConstraint(
            model_name="usercoupon",
            constraint=models.UniqueConstraint(
                fields=("template", "user", "grant_reason_key"),
                name="user_coupon_one_grant_per_reason",
            ),
        ),
    ]
