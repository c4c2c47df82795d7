from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from coupons.models import CouponTemplate, UserCoupon

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
        ("threshold", "all", "public"),
        ("threshold", "categories", "public"),
    ]
    assert CouponTemplate.objects.count() == 10
    assert CouponTemplate.objects.filter(valid_days=7, code="WELCOME7").count() == 1
    assert CouponTemplate.objects.filter(max_discount__isnull=False).count() == 2
    granted = UserCoupon.objects.get(source="grant")
    assert (granted.user.username, granted.granted_by.username) == ("bob", "admin")
    assert out.getvalue().startswith("Demo data already present.")
