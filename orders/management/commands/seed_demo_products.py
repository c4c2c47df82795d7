"""Create a few demo products once (idempotent), so the order API can be tried at once."""

from django.core.management.base import BaseCommand

from orders.models import Category, Product

# name, price in cents, stock, category (the scoped demo coupons name these categories), in
# Chinese as the shop's operators would enter them; ids 1-4 in this order on a new database,
# which the API docs' examples name.
DEMO_PRODUCTS = [
    ("茶具套装", 9900, 50, "茶品"),
    ("绿茶 250 克", 4500, 200, "茶品"),
    ("电饭煲", 29700, 20, "厨具"),
    ("筷子", 1500, 500, "厨具"),
]


class Command(BaseCommand):
    help = "Create demo products unless there are products already."

    def handle(self, *args, **options):
        if Product.objects.exists():
            self.stdout.write("Demo products already present.")
            return
        categories = {
            name: Category.objects.get_or_create(name=name)[0]
            for name in sorted({category for *_, category in DEMO_PRODUCTS})
        }
        Product.objects.bulk_create(
            Product(name=name, price=price, stock=stock, category=categories[category])
            for name, price, stock, category in DEMO_PRODUCTS
        )
        listing = ", ".join(
            f"{name} ({price} cents, {category})" for name, price, _, category in DEMO_PRODUCTS
        )
        self.stdout.write(f"Demo products created: {listing}.")
