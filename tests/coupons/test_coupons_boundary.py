"""coupons imports nothing from orders: the catalog reaches it only through the injected
COUPON_SCOPE_CATALOG (coupons.catalog)."""

import ast
from pathlib import Path

import coupons


def orders_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return [name for name in found if name == "orders" or name.startswith("orders.")]


def test_coupons_imports_nothing_from_orders():
    root = Path(coupons.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > 10

    violations = {str(p.relative_to(root)): bad for p in files if (bad := orders_imports(p))}

    assert violations == {}


def test_the_scan_catches_an_orders_import(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("from orders.models import Product\nimport orders.services\n")
    assert orders_imports(sneaky) == ["orders.models", "orders.services"]


def test_the_catalog_is_injected_by_a_setting(settings):
    from coupons.catalog import scope_catalog

    assert settings.COUPON_SCOPE_CATALOG == "orders.catalog.OrdersCatalog"
    settings.COUPON_SCOPE_CATALOG = ""
    assert scope_catalog() is None
