"""Cancel unpaid orders past their payment deadline, one order per transaction, through the
same cancel path as a user's cancel (stock and coupon returned)."""

from django.core.management.base import BaseCommand

from config import clock
from orders import services
from orders.models import Order

BATCH_SIZE = 500


class Command(BaseCommand):
    help = "Cancel orders still awaiting payment after expire_at; safe to run concurrently."

    def handle(self, *args, **options):
        now = clock.now()
        cancelled = skipped = 0
        last_id = 0
        while True:
            # Keyset pages over a snapshot of candidates; each one is re-checked under its own
            # conditional UPDATE, so one a user cancelled or paid meanwhile is skipped.
            batch = list(
                Order.objects.filter(
                    status=Order.Status.PENDING_PAYMENT, expire_at__lt=now, pk__gt=last_id
                )
                .order_by("pk")
                .values_list("pk", flat=True)[:BATCH_SIZE]
            )
            if not batch:
                break
            for order_id in batch:
                if services.order_expire(order_id=order_id):
                    cancelled += 1
                else:
                    skipped += 1
            last_id = batch[-1]
            self.stdout.write(f"Cancelled {cancelled} expired orders so far.")
        self.stdout.write(
            f"Done: cancelled {cancelled} expired orders, skipped {skipped} already settled."
        )
