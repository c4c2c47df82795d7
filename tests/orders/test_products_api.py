"""GET /api/products (SPEC section 17, "For integrators"): the catalog a client orders from,
paginated like every list, each product with its category's id and name."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from orders.models import Category
from tests.support.clients import bearer_client
from tests.support.factories import ProductFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_products_are_listed_a_page_at_a_time_with_their_category():
    # given
    tea = Category.objects.create(name="Tea")
    first = ProductFactory(name="Tea set", price=9900, stock=7, category=tea)
    second = ProductFactory(name="Gift card", price=5000, stock=3)  # no category
    ProductFactory(name="Cup", category=tea)

    # when
    answer = bearer_client(UserFactory()).get("/api/products?page_size=2")

    # then
    assert answer.status_code == 200
    assert answer.json() == {
        "count": 3,
        "next": "http://testserver/api/products?page=2&page_size=2",
        "previous": None,
        "results": [
            {
                "id": first.pk,
                "name": "Tea set",
                "price": 9900,
                "stock": 7,
                "category": {"id": tea.pk, "name": "Tea"},
            },
            {"id": second.pk, "name": "Gift card", "price": 5000, "stock": 3, "category": None},
        ],
    }


def test_a_page_of_products_costs_the_same_queries_however_many_categories():
    client = bearer_client(UserFactory())
    for index in range(5):
        ProductFactory(category=Category.objects.create(name=f"Category {index}"))

    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/products").status_code == 200

    # The user (token check), the count, the page with its categories joined.
    assert len(queries) == 3, [query["sql"] for query in queries]


def test_products_need_a_token():
    answer = APIClient().get("/api/products")

    assert answer.status_code == 401
    assert answer.json()["code"] == "not_authenticated"


def test_a_bad_page_size_is_400_naming_the_field():
    answer = bearer_client(UserFactory()).get("/api/products?page_size=zero")

    assert answer.status_code == 400
    assert answer.json()["fields"] == {"page_size": ["Must be a positive integer."]}
