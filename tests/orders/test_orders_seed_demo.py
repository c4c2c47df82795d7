from io import StringIO

import pytest
from django.core.management import call_command

from orders.models import Product

pytestmark = pytest.mark.django_db


def test_demo_products_are_created_once():
    call_command("seed_demo_products", stdout=StringIO())
    out = StringIO()
    call_command("seed_demo_products", stdout=out)

    assert Product.objects.count() == 4
    assert sorted(Product.objects.values_list("category__name", flat=True)) == [
        "厨具",
        "厨具",
        "茶品",
        "茶品",
    ]
    assert out.getvalue().strip() == "Demo products already present."
