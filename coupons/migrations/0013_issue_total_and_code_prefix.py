# Issue 24: the issue total's label (a count, 发放总量), and single-use codes with an
# operator's prefix ("SPRING-7KQ2...": longer codes, the constraint admits the prefix).

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('coupons', '0012_template_incarnation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='coupontemplate',
            name='total',
            field=models.PositiveIntegerField(help_text='How many may be issued.', verbose_name='issue total'),
        ),
        migrations.RemoveConstraint(
            model_name='singleusecode',
            name='single_use_code_alphabet',
        ),
        migrations.AlterField(
            model_name='singleusecode',
            name='code',
            field=models.CharField(max_length=21, unique=True, verbose_name='code'),
        ),
        migrations.AddConstraint(
            model_name='singleusecode',
            constraint=models.CheckConstraint(condition=models.Q(('code__regex', '^([A-Z0-9]{1,8}-)?[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{10,}$')), name='single_use_code_alphabet'),
        ),
    ]
