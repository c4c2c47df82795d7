"""A property-based run of /api/schema/ against the live app (SPEC section 12): schemathesis
(CLI, pinned in requirements-dev.txt) against the shipped server on the test database, once with
a shopper's token and once with a staff token. Any 5xx, undocumented status, wrong content
type, undocumented or malformed header, or body that contradicts the schema fails the test.
docs/decisions/0028-api-schema-held-by-tests.md says which checks run and what is bounded."""

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework_simplejwt.tokens import AccessToken

from core import clock
from orders import services
from tests.support.admin_users import EVERY_STAFF_PERMISSION, staff_with
from tests.support.factories import (
    CouponTemplateFactory,
    ProductFactory,
    UserCouponFactory,
    UserFactory,
)
from tests.support.live_server import app_serving

User = get_user_model()

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    ]
)
# Bounded for the suite: examples per operation in the fuzzing phase; the coverage phase
# (boundary and invalid values of every parameter, deterministic) runs in full.
MAX_EXAMPLES = 10


def shop_with_data() -> dict[str, int]:
    """Committed rows for the run to meet: templates in every state, products, a shopper with
    a coupon and orders (pending, paid), and a staff user."""
    now = clock.now()
    shopper, staff = UserFactory(), staff_with(*EVERY_STAFF_PERMISSION)
    open_template = CouponTemplateFactory(total=1_000, per_user_limit=3)
    CouponTemplateFactory(valid_from=now + timedelta(days=1), valid_until=now + timedelta(days=2))
    CouponTemplateFactory(valid_from=now - timedelta(days=2), valid_until=now - timedelta(days=1))
    sold_out = CouponTemplateFactory(total=1)
    UserCouponFactory(template=sold_out)
    CouponTemplateFactory(type="threshold", value=3_000, min_amount=10_000)
    product = ProductFactory(price=9_900, stock=100_000)
    coupon = UserCouponFactory(user=shopper, template=CouponTemplateFactory(value=500))
    line = [{"product_id": product.pk, "quantity": 1}]
    pending = services.order_checkout(user_id=shopper.pk, items=line, coupon_id=coupon.pk)
    paid = services.order_checkout(user_id=shopper.pk, items=line)
    services.order_pay(user_id=shopper.pk, order_id=paid.pk, amount=paid.pay_amount)
    return {
        "shopper": shopper.pk,
        "staff": staff.pk,
        "template": open_template.pk,
        "order": pending.pk,
        "product": product.pk,
    }


def schemathesis_config(path: Path, ids: dict[str, int]) -> Path:
    """Real ids for the operations that act on one order or template, so that the run reaches
    their logic instead of a 404 for a random id (the listing operations still get random
    ones)."""
    path.write_text(
        f"""
[[operations]]
include-path-regex = "^/api/orders/\\\\{{order_id\\\\}}"
parameters = {{ order_id = "{ids["order"]}" }}

[[operations]]
include-path-regex = "^/api/(admin/)?coupons/\\\\{{template_id\\\\}}"
parameters = {{ template_id = "{ids["template"]}" }}
"""
    )
    return path


def run_schemathesis(
    base_url: str, token: str, config: Path, cwd: Path, *only_paths: str
) -> subprocess.CompletedProcess:
    selection = [arg for regex in only_paths for arg in ("--include-path-regex", regex)]
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file", str(config),
        "--no-color",
        "run", f"{base_url}/api/schema/",
        "--header", f"Authorization: Bearer {token}",
        "--checks", CHECKS,
        "--max-examples", str(MAX_EXAMPLES),
        "--phases", "examples,coverage,fuzzing",
        "--seed", "20261130",
        "--generation-database", "none",
        "--request-timeout", "10",
        # One worker: with two threads, hypothesis' lambda descriptions (ast.parse) hit a
        # CPython 3.11 race ("AST constructor recursion depth mismatch").
        "--workers", "1",
        *selection,
    ]  # fmt: skip
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_the_live_app_keeps_to_its_schema_for_a_shopper_and_for_staff(tmp_path):
    ids = shop_with_data()
    config = schemathesis_config(tmp_path / "schemathesis.toml", ids)
    runs = {
        # Every operation as a shopper (the staff routes answer 403 to them).
        "shopper": (),
        # Staff take the same code paths as a shopper everywhere else; only the staff routes
        # differ (and were where the 5xx were), so the staff run covers those.
        "staff": ("^/api/admin/",),
    }
    failures = []
    with app_serving(tmp_path / "server.log", workers=2) as base_url:
        for who, only_paths in runs.items():
            token = str(AccessToken.for_user(User.objects.get(pk=ids[who])))
            result = run_schemathesis(base_url, token, config, tmp_path, *only_paths)
            if result.returncode != 0:
                failures.append(
                    f"--- as {who} (exit {result.returncode}):\n"
                    f"{result.stdout[-6000:]}{result.stderr[-2000:]}"
                )
    assert not failures, "\n".join(failures)
