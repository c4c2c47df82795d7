"""Rebuild the Redis claim counters of one or all templates from the database."""

from django.core.management.base import BaseCommand, CommandError

from coupons.errors import TemplateNotFound
from coupons.issuing import (
    REDIS_FAILURES,
    coupon_counters_forget_unknown,
    coupon_counters_rebuild,
)
from coupons.models import CouponTemplate


class Command(BaseCommand):
    help = (
        "Reset Redis claim counters to the database facts (all templates, or --template ID); "
        "without --template, also drop the facts of template ids the database does not hold."
    )

    def add_arguments(self, parser):
        parser.add_argument("--template", type=int, help="only this template id")

    def handle(self, *args, template=None, **options):
        if template is not None:
            template_ids = [template]
        else:
            template_ids = list(CouponTemplate.objects.order_by("pk").values_list("pk", flat=True))
        total = len(template_ids)
        try:
            for done, template_id in enumerate(template_ids, start=1):
                try:
                    claimed = coupon_counters_rebuild(template_id=template_id)
                except TemplateNotFound as error:
                    raise CommandError(f"template {template_id}: {error.detail}") from error
                self.stdout.write(f"[{done}/{total}] template {template_id}: claimed {claimed}")
            if template is None:
                for template_id in coupon_counters_forget_unknown():
                    self.stdout.write(f"template {template_id}: not in the database, dropped")
        except REDIS_FAILURES as error:
            raise CommandError(f"Redis is unavailable: {error}") from error
        self.stdout.write(self.style.SUCCESS(f"Rebuilt counters for {total} template(s)."))
