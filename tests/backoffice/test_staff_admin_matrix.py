"""Issue 21, finding 1, in the Django admin: every staff operation x every staff permission,
for a staff member who may look at everything (VIEW_ONLY) and holds one permission more. With
what backoffice/staff_actions.py asks for the operation (or as a superuser) it is done and
recorded once; without, it is refused (403, or the action not offered) and nothing changes."""

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from backoffice.staff_actions import StaffAction
from tests.support.admin_forms import form_data
from tests.support.admin_users import VIEW_ONLY
from tests.support.staff_jobs import JOB_PAGE, finished_job
from tests.support.staff_matrix import HOLDERS, World, acting_staff, recorded, state, world

pytestmark = pytest.mark.django_db

TEMPLATES = "/admin/coupons/coupontemplate/"


def action(name: str, template_ids: list[int], **extra) -> dict:
    return {"action": name, "_selected_action": template_ids, **extra}


@dataclass(frozen=True)
class Operation:
    needed: frozenset[str]  # beyond VIEW_ONLY and `base`
    send: Callable[[object, World], object]
    action: StaffAction
    base: tuple[str, ...] = ()


OPERATIONS = {
    "publish": Operation(
        frozenset({"coupons.add_coupontemplate"}),
        lambda client, w: client.post(f"{TEMPLATES}add/", form_data()),
        StaffAction.TEMPLATE_PUBLISH,
    ),
    "edit": Operation(
        frozenset({"coupons.change_coupontemplate"}),
        lambda client, w: client.post(
            f"{TEMPLATES}{w.template.pk}/change/", form_data(total="999")
        ),
        StaffAction.TEMPLATE_EDIT,
    ),
    "delete": Operation(
        frozenset({"coupons.delete_coupontemplate"}),
        lambda client, w: client.post(f"{TEMPLATES}{w.template.pk}/delete/", {"post": "yes"}),
        StaffAction.TEMPLATE_DELETE,
    ),
    "pause": Operation(
        frozenset({"coupons.pause_coupons"}),
        lambda client, w: client.post(TEMPLATES, action("pause_templates", [w.template.pk])),
        StaffAction.TEMPLATE_PAUSE,
    ),
    "resume": Operation(
        frozenset({"coupons.pause_coupons"}),
        lambda client, w: client.post(TEMPLATES, action("resume_templates", [w.paused.pk])),
        StaffAction.TEMPLATE_RESUME,
    ),
    "grant": Operation(
        frozenset({"coupons.grant_coupons"}),
        lambda client, w: client.post(
            TEMPLATES,
            action("grant_to_users", [w.template.pk], apply="1", users="shopper", reason="m"),
        ),
        StaffAction.COUPONS_GRANT,
    ),
    "export coupons": Operation(
        frozenset({"coupons.export_coupons"}),
        lambda client, w: client.post(f"{TEMPLATES}{w.template.pk}/records/export/"),
        StaffAction.COUPONS_EXPORT,
    ),
    "export single-use codes": Operation(
        frozenset({"coupons.manage_codes", "coupons.export_coupons"}),
        lambda client, w: client.post(
            TEMPLATES, action("export_single_use_codes", [w.template.pk])
        ),
        StaffAction.CODES_EXPORT,
    ),
    "adjust stock": Operation(
        frozenset({"orders.adjust_stock"}),
        lambda client, w: client.post(
            f"/admin/orders/product/{w.product.pk}/change/",
            {"name": w.product.name, "category": "", "price": "99.00", "stock_change": "5"},
        ),
        StaffAction.STOCK_ADJUST,
        base=("orders.change_product",),
    ),
    "cancel an order": Operation(
        frozenset({"orders.cancel_order"}),
        lambda client, w: client.post(
            "/admin/orders/order/",
            {"action": "cancel_orders", "_selected_action": [w.order.pk], "confirm": "1"},
        ),
        StaffAction.ORDER_CANCEL,
    ),
    "refund an order": Operation(
        frozenset({"orders.refund_order"}),
        lambda client, w: client.post(
            "/admin/orders/order/",
            {
                "action": "refund_orders",
                "_selected_action": [w.paid.pk],
                "confirm": "1",
                "reason": "matrix",
            },
        ),
        StaffAction.ORDER_REFUND,
    ),
}


def done(response) -> bool:
    """The admin answered as it does after doing it: a redirect (an export's: to its job)."""
    return response.status_code == 302


@pytest.mark.parametrize("holder", [*HOLDERS, "every needed"])
@pytest.mark.parametrize("name", OPERATIONS)
def test_an_admin_operation_needs_its_permission(client, name, holder):
    # given
    operation = OPERATIONS[name]
    things = world()
    if holder == "every needed":
        staff = acting_staff(*operation.needed, *VIEW_ONLY, *operation.base)
    else:
        staff = acting_staff(holder, *VIEW_ONLY, *operation.base)
    allowed = holder in ("superuser", "every needed") or operation.needed == {holder}
    client.force_login(staff)
    before = state()

    # when
    response = operation.send(client, things)
    if JOB_PAGE.search(response.get("Location", "")):
        finished_job(response)  # an export: a job, run as a worker runs it

    # then
    if not allowed:
        # 403; or the list again (200, or 302 back to it when other actions were offered);
        # or, for the stock, the product saved without the adjustment.
        assert response.status_code in (200, 302, 403)
        assert not response.streaming
        assert state() == before
        return
    assert done(response), response.status_code
    assert state() != before
    assert recorded(operation.action, staff) == 1


def test_a_view_only_staff_member_is_offered_no_staff_action(client):
    staff = acting_staff(*VIEW_ONLY)
    client.force_login(staff)
    things = world()

    page = client.get(TEMPLATES).content.decode()
    template_page = client.get(f"{TEMPLATES}{things.template.pk}/change/").content.decode()

    for name in ("pause_templates", "resume_templates", "export_single_use_codes"):
        assert f'data-name="{name}"' not in page
    assert "records/export/" not in template_page
