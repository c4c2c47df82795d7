"""What /api/schema/ tells an integrator (SPEC section 17, "For integrators"): every operation
says what it does, path ids are integers as the URLs take them, and the catalog is listed."""

import pytest
import yaml
from rest_framework.test import APIClient

from api.converters import IdConverter

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema() -> dict:
    return yaml.safe_load(APIClient().get("/api/schema/").content)


def operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_operation_has_a_description(schema):
    undescribed = [
        f"{method.upper()} {path}"
        for path, method, operation in operations(schema)
        if len(operation.get("description", "").strip()) < 20
    ]

    assert undescribed == []


def test_path_ids_are_integers_in_the_range_the_urls_accept(schema):
    path_ids = {
        (path, parameter["name"]): parameter["schema"]
        for path, _, operation in operations(schema)
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path"
    }

    assert {name for _, name in path_ids} == {"template_id", "order_id", "campaign_id"}
    for id_schema in path_ids.values():
        assert id_schema == {
            "type": "integer",
            "format": "int64",
            "minimum": 0,
            "maximum": 10**18 - 1,
        }
    # The largest documented id is one the URL converter takes; one more digit it does not.
    assert IdConverter().to_python(str(10**18 - 1)) == 10**18 - 1
    assert len(str(10**18)) > int(IdConverter.regex.split(",")[1].rstrip("}"))


def test_the_product_list_documents_its_category(schema):
    product = schema["components"]["schemas"]["Product"]
    category = schema["components"]["schemas"]["Category"]

    assert product["required"] == ["category", "id", "name", "price", "stock"]
    assert product["properties"]["category"]["nullable"] is True
    assert category["properties"] == {
        "id": {"type": "integer", "readOnly": True},
        "name": {"type": "string", "readOnly": True},
    }
