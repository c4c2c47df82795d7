"""Every admin action says what it does by its button's look (simpleui draws one that says
nothing as a plain grey button): read from the page simpleui renders, as the browser gets it."""

import json
import re

import pytest

from backoffice.action_buttons import ButtonLook

pytestmark = pytest.mark.django_db

# simpleui's own actions, which it draws itself (the delete button, import-export's export).
SIMPLEUI_DRAWS = {"delete_selected", "export_admin_action"}
LIST_PAGES = {
    "/admin/coupons/coupontemplate/": {
        "grant_to_users": ButtonLook.ISSUE,
        "pause_templates": ButtonLook.STOP,
        "resume_templates": ButtonLook.RESUME,
        "export_single_use_codes": ButtonLook.DOWNLOAD,
        "export_single_use_codes_xlsx": ButtonLook.DOWNLOAD,
        "export_templates_xlsx": ButtonLook.DOWNLOAD,
        "export_templates_csv": ButtonLook.DOWNLOAD,
    },
    "/admin/orders/order/": {
        "cancel_orders": ButtonLook.GIVE_BACK,
        "refund_orders": ButtonLook.GIVE_BACK,
    },
    "/admin/auth/user/": {"grant_coupon_to_users": ButtonLook.ISSUE},
}


def buttons_on(page: str) -> dict:
    """The `customButton: {...}` simpleui writes into the change list for its action bar."""
    found = re.search(r"customButton:(\{.*?\}),\s*exts:", page, re.S)
    assert found, "no action bar on the page"
    return json.loads(found.group(1))


@pytest.mark.parametrize("url", sorted(LIST_PAGES))
def test_each_action_button_has_the_look_of_what_it_does(admin_site, url):
    buttons = buttons_on(admin_site.get(url).content.decode())

    shown = {name: (button.get("type", ""), button.get("icon")) for name, button in buttons.items()}
    ours = {name: look for name, look in shown.items() if name not in SIMPLEUI_DRAWS}
    assert ours == {name: look.value for name, look in LIST_PAGES[url].items()}
