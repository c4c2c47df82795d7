"""CouponTemplate.incarnation: a random token per row, which the template's Redis counts are
keyed by (docs/decisions/0721-redis-facts-cannot-outlive-their-template.md). Existing rows get
one each (AddField would give every row the same)."""

import secrets

from django.db import migrations, models

import coupons.fields


def give_each_template_an_incarnation(apps, schema_editor):
    CouponTemplate = apps.get_model("coupons", "CouponTemplate")
    for pk in CouponTemplate.objects.filter(incarnation__isnull=True).values_list("pk", flat=True):
        CouponTemplate.objects.filter(pk=pk).update(incarnation=secrets.token_hex(8))


class Migration(migrations.Migration):
    dependencies = [("coupons", "0011_claim_decision_procedure")]

    operations = [
        migrations.AddField(
            model_name="coupontemplate",
            name="incarnation",
            field=models.CharField(editable=False, max_length=16, null=True),
        ),
        migrations.RunPython(give_each_template_an_incarnation, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="coupontemplate",
            name="incarnation",
            field=coupons.fields.IncarnationField(
                default=coupons.fields.new_incarnation, editable=False, max_length=16
            ),
        ),
    ]
