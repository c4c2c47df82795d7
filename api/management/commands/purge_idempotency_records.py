from django.core.management.base import BaseCommand

from api.idempotency import records_purge


class Command(BaseCommand):
    help = "Delete Idempotency-Key records older than IDEMPOTENCY_KEY_HOURS (cron: hourly)."

    def handle(self, *args, **options):
        deleted = records_purge()
        self.stdout.write(f"Deleted {deleted} expired idempotency records.")
