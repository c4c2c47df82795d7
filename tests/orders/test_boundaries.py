"""orders may know coupons only through coupons.ports and coupons.errors."""

import ast
from pathlib import Path

import orders

ALLOWED = {"coupons.ports", "coupons.errors"}


def coupon_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "coupons":  # from coupons import ports
                found += [f"coupons.{alias.name}" for alias in node.names]
            else:
                found.append(node.module)
    return [name for name in found if name == "coupons" or name.startswith("coupons.")]


def test_orders_imports_only_the_coupon_ports_and_errors():
    root = Path(orders.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > 5

    violations = {
        str(path.relative_to(root)): bad
        for path in files
        if (bad := [name for name in coupon_imports(path) if name not in ALLOWED])
    }

    assert violations == {}


def test_the_import_scan_catches_a_forbidden_import(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text(
        "from coupons.models import UserCoupon\nimport coupons.services\n"
        "from coupons import ports, selectors\n"
    )
    assert coupon_imports(sneaky) == [
        "coupons.models",
        "coupons.services",
        "coupons.ports",
        "coupons.selectors",
    ]
