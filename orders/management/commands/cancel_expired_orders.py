"""Cancel unpaid orders past their payment deadline, one order per transaction, through the
same cancel path as a user's cancel (stock and coupon returned). `run_scheduler` runs the same
service every few seconds; this command is the one-off form."""

from django.core.management.base import BaseCommand

from orders import services


class Command(BaseCommand):
    help = "Cancel orders still awaiting payment after expire_at; safe to run concurrently."

    def handle(self, *args, **options):
        run = services.orders_expire_overdue(
            on_batch=lambda so_far: self.stdout.write(
                f"Cancelled {so_far.cancelled} expired orders so far."
            )
        )
        self.stdout.write(
            f"Done: cancelled {run.cancelled} expired orders,"
            f" skipped {run.skipped} already settled."
        )
