"""Create a few demo products once (idempotent), so the order API can be tried at once."""

from django.core.management.base import BaseCommand

from orders.models import Product

DEMO_PRODUCTS = [("Tea set", 9900, 50), ("Rice cooker", 29700, 20), ("Chopsticks", 1500, 500)]


class Command(BaseCommand):
    help = "Create demo products unless there are products already."

    def handle(self, *args, **options):
        if Product.objects.exists():
            self.stdout.write("Demo products already present.")
            return
        Product.objects.bulk_create(
            Product(name=name, price=price, stock=stock) for name, price, stock in DEMO_PRODUCTS
        )
        listing = ", ".join(f"{name} ({price} cents)" for name, price, _ in DEMO_PRODUCTS)
        self.stdout.write(f"Demo products created: {listing}.")
