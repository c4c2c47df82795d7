"""Refunds (SPEC sections 20 and 25): staff refund a paid, shipped or completed order, whole or
some units of some lines, with a reason; the refunded stock comes back, the coupon too once the
whole order is refunded and while its window is open; each refund is recorded with its amount
and reason; twice is once."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages

from backoffice.errors import StaffActionRefused
from backoffice.staff_actions import StaffAction, recorded_action, staff_audit
from coupons.models import UserCoupon
from orders.errors import OrderInvalid, OrderInvalidState
from orders.models import Order, Product
from orders.refunds import order_refund
from orders.services import order_checkout, order_pay
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.clients import bearer_client
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, ProductFactory, UserCouponFactory


def paid_order(coupon=None, *, quantity=2):
    product = ProductFactory(price=5000, stock=10)
    user_id = coupon.user_id if coupon is not None else UserCouponFactory().user_id
    order = order_checkout(
        user_id=user_id,
        items=[{"product_id": product.pk, "quantity": quantity}],
        coupon_id=None if coupon is None else coupon.pk,
    )
    return order_pay(user_id=user_id, order_id=order.pk, amount=order.pay_amount), product


def refunds_recorded(order) -> list[dict]:
    entries = LogEntry.objects.filter(object_id=str(order.pk)).order_by("pk")
    return [
        amounts
        for entry in entries
        if (recorded := recorded_action(entry)) and recorded[0] == StaffAction.ORDER_REFUND
        for amounts in [recorded[1]]
    ]


@pytest.mark.django_db
def test_a_refund_returns_stock_and_the_coupon_and_is_recorded_once(staff):
    coupon = UserCouponFactory(template=CouponTemplateFactory(value=500))
    order, product = paid_order(coupon)

    refunded = order_refund(
        order_id=order.pk,
        reason="damaged",
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )
    again = order_refund(
        order_id=order.pk,
        reason="damaged",
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )

    assert (refunded.order.status, again.order.status) == ("refunded", "refunded")
    assert (refunded.refund.amount, again.refund) == (9500, None)
    assert Product.objects.get(pk=product.pk).stock == 10
    coupon.refresh_from_db()
    assert (coupon.status, coupon.used_at) == (UserCoupon.Status.UNUSED, None)
    assert refunds_recorded(order) == [
        {
            "amount": 9500,
            "reason": "damaged",
            "whole": True,
            "stock_returned": {str(product.pk): 2},
            "coupon": "returned",
        }
    ]
    order.refresh_from_db()
    assert order.refunded_at is not None and order.paid_at is not None


@pytest.mark.django_db
def test_a_coupon_whose_window_closed_stays_used(staff, frozen_now):
    coupon = UserCouponFactory()
    order, _product = paid_order(coupon)
    frozen_now(coupon.valid_until + timedelta(seconds=1))

    order_refund(
        order_id=order.pk,
        reason="late",
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )

    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.USED
    assert refunds_recorded(order)[0]["coupon"] == "kept"


@pytest.mark.django_db
def test_only_paid_orders_are_refunded_and_only_with_the_permission(staff):
    order, product = paid_order()
    pending = order_checkout(
        user_id=order.user_id, items=[{"product_id": product.pk, "quantity": 1}]
    )
    viewer = staff_with(*VIEW_ONLY)

    with pytest.raises(OrderInvalidState):
        order_refund(
            order_id=pending.pk,
            reason="never paid",
            refunded_by_id=staff.pk,
            audit=staff_audit(staff, StaffAction.ORDER_REFUND),
        )
    with pytest.raises(StaffActionRefused):
        order_refund(
            order_id=order.pk,
            reason="no right",
            refunded_by_id=viewer.pk,
            audit=staff_audit(viewer, StaffAction.ORDER_REFUND),
        )
    assert list(Order.objects.order_by("pk").values_list("status", flat=True)) == [
        "paid",
        "pending_payment",
    ]
    assert Product.objects.get(pk=product.pk).stock == 7
    assert refunds_recorded(order) == []


@pytest.mark.django_db(transaction=True)
def test_two_refunds_at_once_refund_once(staff):
    coupon = UserCouponFactory()
    order, product = paid_order(coupon)

    run_together(
        [
            lambda: order_refund(
                order_id=order.pk,
                reason="twice",
                refunded_by_id=staff.pk,
                audit=staff_audit(staff, StaffAction.ORDER_REFUND),
            )
        ]
        * 2
    )

    assert Product.objects.get(pk=product.pk).stock == 10
    assert len(refunds_recorded(order)) == 1


@pytest.mark.django_db
def test_the_admin_refunds_the_selected_paid_orders(client):
    staff = staff_with(*VIEW_ONLY, "orders.refund_order")
    client.force_login(staff)
    order, product = paid_order()
    pending = order_checkout(
        user_id=order.user_id, items=[{"product_id": product.pk, "quantity": 1}]
    )

    selected = {"action": "refund_orders", "_selected_action": [order.pk, pending.pk]}

    asked = client.post("/admin/orders/order/", selected, HTTP_ACCEPT_LANGUAGE="zh-hans")
    without_reason = client.post("/admin/orders/order/", selected | {"confirm": "1"})
    nothing_yet = Order.objects.get(pk=order.pk).status
    response = client.post(
        "/admin/orders/order/", selected | {"confirm": "1", "reason": "顾客退货"}
    )

    assert asked.status_code == without_reason.status_code == 200
    assert "refund-confirmation" in asked.content.decode() and "退款" in asked.content.decode()
    assert list(without_reason.context["form"].errors) == ["reason"]
    assert nothing_yet == "paid"
    assert response.status_code == 302
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert any("Refunded 1 order" in text for text in texts)
    assert any(f"#{pending.pk}" in text for text in texts)
    order.refresh_from_db()
    assert order.status == "refunded"
    assert Product.objects.get(pk=product.pk).stock == 9


def shipped_order(*, lines, coupon=None):
    """A paid order of `lines` ((price, quantity) each), marked shipped."""
    products = [ProductFactory(price=price, stock=10) for price, _ in lines]
    user_id = coupon.user_id if coupon is not None else UserCouponFactory().user_id
    order = order_checkout(
        user_id=user_id,
        items=[
            {"product_id": product.pk, "quantity": quantity}
            for product, (_, quantity) in zip(products, lines, strict=True)
        ],
        coupon_id=None if coupon is None else coupon.pk,
    )
    order = order_pay(user_id=user_id, order_id=order.pk, amount=order.pay_amount)
    Order.objects.filter(pk=order.pk).update(status=Order.Status.SHIPPED)
    return Order.objects.get(pk=order.pk), products


@pytest.mark.django_db
def test_lines_of_a_shipped_order_are_refunded_in_parts_that_add_up_to_what_was_paid(staff):
    # given: 3 x 3333 and 1 x 1000 with a 1000 discount shared over the lines
    coupon = UserCouponFactory(template=CouponTemplateFactory(value=1000))
    order, (mugs, cup) = shipped_order(lines=[(3333, 3), (1000, 1)], coupon=coupon)
    mug_line = order.items.get(product=mugs)
    cup_line = order.items.get(product=cup)

    # when: one mug, then two more mugs, then the cup
    first = order_refund(
        order_id=order.pk,
        reason="one broken",
        lines={mug_line.pk: 1},
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )
    coupon.refresh_from_db()
    coupon_after_part = coupon.status
    second = order_refund(
        order_id=order.pk,
        reason="two more",
        lines={mug_line.pk: 2},
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )
    last = order_refund(
        order_id=order.pk,
        reason="the cup",
        lines={cup_line.pk: 1},
        refunded_by_id=staff.pk,
        audit=staff_audit(staff, StaffAction.ORDER_REFUND),
    )

    # then
    assert first.order.status == second.order.status == "shipped"
    assert coupon_after_part == UserCoupon.Status.USED  # not the whole order yet
    assert last.order.status == "refunded"
    amounts = [first.refund.amount, second.refund.amount, last.refund.amount]
    assert sum(amounts) == order.pay_amount
    mug_paid = 3333 * 3 - mug_line.discount_amount
    assert amounts[:2] == [mug_paid // 3, mug_paid - mug_paid // 3]
    assert last.refund.coupon_returned is True
    coupon.refresh_from_db()
    assert coupon.status == UserCoupon.Status.UNUSED
    assert [Product.objects.get(pk=p.pk).stock for p in (mugs, cup)] == [10, 10]
    assert [r["reason"] for r in refunds_recorded(order)] == ["one broken", "two more", "the cup"]
    assert [r["coupon"] for r in refunds_recorded(order)] == [
        "kept_partial",
        "kept_partial",
        "returned",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reason", "lines", "field"),
    [
        ("", None, "reason"),
        ("   ", None, "reason"),
        ("x" * 501, None, "reason"),
        ("ok", {}, "lines"),
        ("ok", {10**9: 1}, "lines"),
        ("ok", "too many", "lines"),
        ("ok", "zero", "lines"),
    ],
)
def test_a_refund_without_a_reason_or_with_bad_lines_is_refused_with_nothing_done(
    staff, reason, lines, field
):
    order, (product,) = shipped_order(lines=[(500, 2)])
    line = order.items.get()
    if isinstance(lines, str):
        lines = {"too many": {line.pk: 3}, "zero": {line.pk: 0}}[lines]

    with pytest.raises(OrderInvalid) as refused:
        order_refund(
            order_id=order.pk,
            reason=reason,
            lines=lines,
            refunded_by_id=staff.pk,
            audit=staff_audit(staff, StaffAction.ORDER_REFUND),
        )

    assert list(refused.value.fields) == [field]
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == ("shipped", 0)
    assert Product.objects.get(pk=product.pk).stock == 8
    assert refunds_recorded(order) == []


@pytest.mark.django_db
def test_the_api_refunds_with_the_refund_permission_only_and_replays_a_retry(client, staff):
    order, (product,) = shipped_order(lines=[(500, 2), (800, 1)][:1])
    line = order.items.get()
    url = f"/api/admin/orders/{order.pk}/refund"
    body = {"reason": "少发一件", "lines": [{"line_id": line.pk, "quantity": 1}]}
    viewer = bearer_client(staff_with(*VIEW_ONLY))
    refunder = bearer_client(staff_with(*VIEW_ONLY, "orders.refund_order"))

    refused = viewer.post(url, body, format="json")
    made = refunder.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="refund-1")
    replayed = refunder.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="refund-1")
    no_reason = refunder.post(url, {"reason": ""}, format="json")
    unknown = refunder.post(f"/api/admin/orders/{10**9}/refund", body, format="json")

    assert refused.status_code == 403
    assert made.status_code == 201, made.json()
    assert made.json()["refund"]["amount"] == 500
    assert made.json()["refund"]["lines"] == [{"line_id": line.pk, "quantity": 1}]
    assert made.json()["order"]["refunded_amount"] == 500
    assert made.json()["order"]["items"][0]["refunded_quantity"] == 1
    assert (replayed.status_code, replayed["Idempotent-Replayed"]) == (201, "true")
    assert replayed.json()["refund"]["id"] == made.json()["refund"]["id"]
    assert (no_reason.status_code, list(no_reason.json()["fields"])) == (400, ["reason"])
    assert unknown.status_code == 404
    assert Product.objects.get(pk=product.pk).stock == 9
    assert len(refunds_recorded(order)) == 1


@pytest.mark.django_db
def test_the_admin_refunds_some_units_of_one_order_with_a_reason(client):
    staff = staff_with(*VIEW_ONLY, "orders.refund_order")
    client.force_login(staff)
    order, (product,) = shipped_order(lines=[(700, 3)])
    line = order.items.get()
    page = f"/admin/orders/order/{order.pk}/refund/"

    change = client.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    shown = client.get(page, HTTP_ACCEPT_LANGUAGE="zh-hans")
    without_reason = client.post(page, {f"line_{line.pk}": "1", "reason": ""})
    two = {f"line_{line.pk}": "2", "reason": "两件破损"}
    quoted = client.post(page, two, HTTP_ACCEPT_LANGUAGE="zh-hans")  # the amount first
    changed = client.post(page, two | {f"line_{line.pk}": "3", "confirm": "1400"})
    done = client.post(page, two | {"confirm": "1400"})

    assert page in change
    assert shown.status_code == 200 and "refund-lines" in shown.content.decode()
    assert list(without_reason.context["form"].errors) == ["reason"]
    # Nothing is refunded before the staff member has seen how much; a confirmation whose
    # quantities changed is quoted again.
    assert quoted.status_code == 200 and "这些件数将退款 ¥14.00。" in quoted.content.decode()
    assert 'value="退款 ¥14.00"' in quoted.content.decode()
    assert changed.status_code == 200 and changed.context["quote"] == 2100
    assert done.status_code == 302
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == ("shipped", 1400)
    assert Product.objects.get(pk=product.pk).stock == 9
    assert refunds_recorded(order)[0]["reason"] == "两件破损"
