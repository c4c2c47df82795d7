# The effect's id, written in the effect's own transaction (docs/decisions/0322-idempotency-lease.md).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_idempotency_records"),
    ]

    operations = [
        migrations.AddField(
            model_name="idempotencyrecord",
            name="effect_id",
            field=models.BigIntegerField(null=True),
        ),
    ]
