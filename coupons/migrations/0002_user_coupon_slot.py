"""user_coupons.slot: the user's n-th coupon of a template has slot n, unique per (template,
user), so the claim can enforce the per-user limit with an index instead of a row lock held
across a count (docs/decisions/0002-hot-row-update-last.md)."""

from django.db import migrations, models

BATCH = 1000


def number_existing_coupons(apps, schema_editor):
    """Give each (template, user) pair's coupons slots 1, 2, ... in the order they were
    issued (by id)."""
    UserCoupon = apps.get_model("coupons", "UserCoupon")
    coupons = UserCoupon.objects.order_by("template_id", "user_id", "id").only(
        "id", "template_id", "user_id"
    )
    pair, slot, changed = None, 0, []
    for coupon in coupons.iterator(chunk_size=BATCH):
        if (coupon.template_id, coupon.user_id) != pair:
            pair, slot = (coupon.template_id, coupon.user_id), 0
        slot += 1
        coupon.slot = slot
        changed.append(coupon)
        if len(changed) == BATCH:
            UserCoupon.objects.bulk_update(changed, ["slot"])
            changed = []
    if changed:
        UserCoupon.objects.bulk_update(changed, ["slot"])


class Migration(migrations.Migration):
    dependencies = [
        ("coupons", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="usercoupon",
            name="slot",
            field=models.PositiveIntegerField(default=1, editable=False),
            preserve_default=False,
        ),
        migrations.RunPython(number_existing_coupons, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="usercoupon",
            constraint=models.UniqueConstraint(
                fields=("template", "user", "slot"), name="user_coupon_template_user_slot"
            ),
        ),
        # After the unique index exists: the template foreign key needs an index leading
        # with template_id, and this one's prefix is it.
        migrations.RemoveIndex(model_name="usercoupon", name="user_coupon_template_user"),
        migrations.AddConstraint(
            model_name="usercoupon",
            constraint=models.CheckConstraint(
                condition=models.Q(slot__gte=1), name="user_coupon_slot_positive"
            ),
        ),
    ]
