"""The admin's menu groups are named as Django's own are, capitalised (issue: "accounts",
"coupons" and "orders and products" stood lowercase beside "Authentication and
Authorization"), and in Chinese in zh-hans."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("language", "ours"),
    [
        ("en", {"Coupons", "Orders and products"}),
        ("zh-hans", {"优惠券", "订单与商品"}),
    ],
)
def test_the_menu_groups_are_named_as_djangos_own(admin_client, language, ours):
    response = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE=language)

    names = {app["name"] for app in response.context["app_list"]}
    assert ours <= names
    assert all(name[0].isupper() for name in names if name[0].isascii())
