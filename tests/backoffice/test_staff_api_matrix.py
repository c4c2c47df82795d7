"""Issue 21, finding 1: every admin API operation x every staff permission. A staff member is
allowed exactly when they hold what backoffice/staff_actions.py asks for that operation (a
superuser always); otherwise 403 in the JSON envelope with nothing changed, the audit trail
included. An allowed change is recorded once, by that staff member."""

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from backoffice.staff_actions import StaffAction
from tests.support.clients import bearer_client
from tests.support.staff_matrix import HOLDERS, World, acting_staff, recorded, state, world

pytestmark = pytest.mark.django_db

VIEW = "coupons.view_coupontemplate"
CHANGE = "coupons.change_coupontemplate"
TERMS = {
    "name": "Matrix",
    "type": "direct",
    "value": 300,
    "min_amount": 0,
    "total": 999,
    "per_user_limit": 1,
    "valid_from": "2026-06-01T00:00:00Z",
    "valid_until": "2036-06-30T00:00:00Z",
}

CAMPAIGN = {
    "name": "Matrix campaign",
    "starts_at": "2026-06-01T00:00:00Z",
    "ends_at": "2036-06-30T00:00:00Z",
    "budget": 10_000,
}


@dataclass(frozen=True)
class Operation:
    enough: tuple[frozenset[str], ...]  # any one of these sets allows it
    send: Callable[[object, World], object]
    status: int
    action: StaffAction | None = None  # recorded when allowed


def url(world: World, tail: str = "", *, paused: bool = False) -> str:
    template = world.paused if paused else world.template
    return f"/api/admin/coupons/{template.pk}{tail}"


def alone(*permissions: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset({permission}) for permission in permissions)


OPERATIONS = {
    "list templates": Operation(
        alone(VIEW, CHANGE), lambda client, w: client.get("/api/admin/coupons"), 200
    ),
    "read a template": Operation(alone(VIEW, CHANGE), lambda client, w: client.get(url(w)), 200),
    "publish": Operation(
        alone("coupons.add_coupontemplate"),
        lambda client, w: client.post("/api/admin/coupons", TERMS, format="json"),
        201,
        StaffAction.TEMPLATE_PUBLISH,
    ),
    "edit (PUT)": Operation(
        alone(CHANGE),
        lambda client, w: client.put(url(w), TERMS, format="json"),
        200,
        StaffAction.TEMPLATE_EDIT,
    ),
    "raise the total (PATCH)": Operation(
        alone(CHANGE),
        lambda client, w: client.patch(url(w), {"total": 999_999}, format="json"),
        200,
        StaffAction.TEMPLATE_EDIT,
    ),
    "grant": Operation(
        alone("coupons.grant_coupons"),
        lambda client, w: client.post(
            url(w, "/grants"), {"user_ids": [w.shopper.pk], "reason": "matrix"}, format="json"
        ),
        200,
        StaffAction.COUPONS_GRANT,
    ),
    "pause": Operation(
        alone("coupons.pause_coupons"),
        lambda client, w: client.post(url(w, "/pause")),
        200,
        StaffAction.TEMPLATE_PAUSE,
    ),
    "resume": Operation(
        alone("coupons.pause_coupons"),
        lambda client, w: client.post(url(w, "/resume", paused=True)),
        200,
        StaffAction.TEMPLATE_RESUME,
    ),
    "list single-use codes": Operation(
        alone("coupons.manage_codes"), lambda client, w: client.get(url(w, "/codes")), 200
    ),
    "create single-use codes": Operation(
        alone("coupons.manage_codes"),
        lambda client, w: client.post(url(w, "/codes"), {"count": 3}, format="json"),
        201,
        StaffAction.CODES_CREATE,
    ),
    "list campaigns": Operation(
        alone("coupons.view_campaign", "coupons.change_campaign"),
        lambda client, w: client.get("/api/admin/campaigns"),
        200,
    ),
    "create a campaign": Operation(
        alone("coupons.add_campaign"),
        lambda client, w: client.post("/api/admin/campaigns", CAMPAIGN, format="json"),
        201,
        StaffAction.CAMPAIGN_CREATE,
    ),
    "edit a campaign": Operation(
        alone("coupons.change_campaign"),
        lambda client, w: client.patch(
            f"/api/admin/campaigns/{w.campaign.pk}", {"budget": 20_000}, format="json"
        ),
        200,
        StaffAction.CAMPAIGN_EDIT,
    ),
    "import merchant codes": Operation(
        alone("coupons.manage_codes"),
        lambda client, w: client.post(
            url(w, "/codes/import"),
            {"file": SimpleUploadedFile("codes.csv", b"code\nMATRIX-0001\n")},
            format="multipart",
        ),
        201,
        StaffAction.CODES_IMPORT,
    ),
}


@pytest.mark.parametrize("holder", HOLDERS)
@pytest.mark.parametrize("name", OPERATIONS)
def test_an_api_operation_needs_its_permission(name, holder):
    # given
    operation = OPERATIONS[name]
    things = world()
    staff = acting_staff(holder)
    allowed = holder == "superuser" or any(holder in needed for needed in operation.enough)
    before = state()

    # when
    response = operation.send(bearer_client(staff), things)

    # then
    if not allowed:
        assert response.status_code == 403
        assert response.json()["code"] == "permission_denied"
        assert state() == before
        return
    assert response.status_code == operation.status, response.content
    if operation.action is None:
        assert state() == before  # a read changes nothing and is not recorded
    else:
        assert state() != before
        assert recorded(operation.action, staff) == 1


def test_a_staff_member_without_permissions_is_refused_in_the_envelope(user):
    staff = acting_staff("coupons.view_usercoupon")
    things = world()

    response = bearer_client(staff).patch(url(things), {"total": 999_999}, format="json")

    assert response.status_code == 403
    assert response.json() == {
        "code": "permission_denied",
        "detail": "You do not have permission to perform this action.",
    }
    chinese = bearer_client(staff).post(url(things, "/pause"), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.json()["detail"] == "您没有执行该操作的权限。"


def test_a_shopper_is_refused_every_staff_route(user):
    things = world()
    client = bearer_client(user)

    for operation in OPERATIONS.values():
        assert operation.send(client, things).status_code == 403


def test_an_unsupported_method_is_still_405_for_staff(staff):
    things = world()

    response = bearer_client(staff).delete(url(things))

    assert response.status_code == 405
