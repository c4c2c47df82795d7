"""`make run` without DATABASE_URL serves from SQLite: the claim's guarded UPDATE has a SQLite
form there (MySQL's LAST_INSERT_ID(expr) does not exist in SQLite), run here for real."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CLAIMS_ON_SQLITE = """
import django
django.setup()
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.core.management import call_command
from core import clock
from coupons.errors import ClaimSoldOut
from coupons.services import templates
from coupons.issuing import service as issuing

call_command("migrate", verbosity=0)
users = [get_user_model().objects.create_user(f"shopper{i}") for i in range(2)]
template = templates.coupon_template_publish(
    name="one left", type="direct", value=500, total=1,
    valid_from=clock.now() - timedelta(hours=1), valid_until=clock.now() + timedelta(hours=1),
)
coupon = issuing.coupon_claim(template_id=template.pk, user_id=users[0].pk)
try:
    issuing.coupon_claim(template_id=template.pk, user_id=users[1].pk)
    print("second claim issued")
except ClaimSoldOut:
    print("second claim sold out")
template.refresh_from_db()
print(f"coupon {coupon.user_id == users[0].pk} claimed_count {template.claimed_count}")
"""


def test_claims_on_sqlite_issue_exactly_the_total(tmp_path):
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "COUPON_REDIS_PREFIX": f"sqlite-test-{uuid.uuid4().hex}:",
        "PYTHONPATH": str(ROOT),
    }
    environment.pop("SECRET_KEY", None)
    result = subprocess.run(
        [sys.executable, "-c", CLAIMS_ON_SQLITE],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["second claim sold out", "coupon True claimed_count 1"]
