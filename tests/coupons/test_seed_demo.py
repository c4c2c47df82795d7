from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from coupons.management.commands.seed_demo import CLAIMABLE_DEMO
from coupons.models import Campaign, CouponTemplate, UserCoupon

pytestmark = pytest.mark.django_db


def test_demo_data_is_created_once_with_templates_in_different_states():
    call_command("seed_demo_products", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())
    out = StringIO()
    call_command("seed_demo", stdout=out)

    users = get_user_model().objects.order_by("username")
    assert [(u.username, u.is_staff) for u in users] == [
        ("admin", True),
        ("alice", False),
        ("bob", False),
    ]
    assert users[0].check_password("demo-pass-123")
    kinds = CouponTemplate.objects.values_list("type", "scope", "visibility")
    assert sorted(set(kinds)) == [
        ("direct", "all", "hidden"),
        ("direct", "all", "public"),
        ("percent", "all", "hidden"),
        ("percent", "all", "public"),
        ("percent", "categories", "public"),
        ("threshold", "all", "hidden"),
        ("threshold", "all", "public"),
        ("threshold", "categories", "public"),
    ]
    assert CouponTemplate.objects.count() == 12
    assert set(CouponTemplate.objects.values_list("auto_issue", flat=True)) == {
        "none",
        "paid_order",
        "signup",
    }
    assert Campaign.objects.get().templates.count() == 2
    assert CouponTemplate.objects.filter(valid_days=7, code="WELCOME7").count() == 1
    assert CouponTemplate.objects.filter(max_discount__isnull=False).count() == 2
    granted = UserCoupon.objects.get(source="grant")
    assert (granted.user.username, granted.granted_by.username) == ("bob", "admin")
    assert out.getvalue().startswith("Demo data already present.")


@pytest.mark.django_db(transaction=True)
def test_the_printed_curl_lines_work_on_the_real_port_and_match_the_readme(
    live_server, monkeypatch
):
    """`make run` prints the README's curl lines with its PORT; run them against a live server
    on a port that is not 8000."""
    import json
    import re
    import subprocess
    from pathlib import Path

    port = live_server.url.rsplit(":", 1)[1]
    assert port != "8000"
    monkeypatch.setenv("PORT", port)
    out = StringIO()
    call_command("seed_demo", stdout=out)
    printed = [line.strip() for line in out.getvalue().splitlines()]
    commands = [line for line in printed if line.startswith(("TOKEN=", "curl "))]

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    readme_lines = re.search(r"```sh\n(TOKEN=.*?)```", readme, re.S).group(1).splitlines()
    claimable = CouponTemplate.objects.get(name=CLAIMABLE_DEMO).pk
    assert [
        line.replace(":8000", f":{port}").replace("/coupons/1/", f"/coupons/{claimable}/")
        for line in readme_lines
    ] == commands

    script = "set -e\n" + "\n".join(f"{line}; echo" for line in commands)
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    listed, claimed, mine = (json.loads(line) for line in result.stdout.splitlines() if line)
    assert listed["count"] == CouponTemplate.objects.filter(visibility="public").count()
    assert claimed["template_id"] == claimable
    assert [coupon["id"] for coupon in mine["results"]] == [claimed["id"]]


def test_what_make_run_prints_names_the_time_zone_and_the_redis_prefix(settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    call_command("seed_demo_products", stdout=StringIO())
    out = StringIO()

    call_command("seed_demo", stdout=out)

    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert "Times:     shown in Asia/Shanghai (TIME_ZONE to change)" in printed
    assert f"Redis:     keys under {settings.COUPON_REDIS_PREFIX}" in printed
