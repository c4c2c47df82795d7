"""Create the stored procedures the app calls again, as the latest migration defines them: for a
database restored from a dump taken without --routines (docs/operations.md, "Restores"), which
`migrate` does not notice because its history says the procedure was made. Safe to run again."""

import importlib

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

# The migration that last defined each procedure (a change to one is a new migration: name
# it here).
PROCEDURE_MIGRATIONS = {
    "coupon_decide": "coupons.migrations.0023_claim_procedure_compares_bytes_and_signals_numbers",
}


class Command(BaseCommand):
    help = "Create the app's stored procedures again (after a restore without --routines)."

    def handle(self, *args, **options):
        if connection.vendor != "mysql":
            raise CommandError("Only MySQL/MariaDB has the procedures; nothing to do here.")
        for name, module in PROCEDURE_MIGRATIONS.items():
            migration = importlib.import_module(module)
            with connection.cursor() as cursor:
                cursor.execute(migration.DROP)
                cursor.execute(migration.CREATE)
            self.stdout.write(f"procedure {name}: created from {module.rsplit('.', 1)[-1]}")
        self.stdout.write(self.style.SUCCESS("Every procedure is in place."))
