from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from coupons.models import CouponTemplate

pytestmark = pytest.mark.django_db


def test_demo_data_is_created_once_with_templates_in_different_states():
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
    assert CouponTemplate.objects.count() == 4
    assert out.getvalue().startswith("Demo data already present.")
