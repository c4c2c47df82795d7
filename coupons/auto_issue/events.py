"""What an event writes, in the event's own transaction: one task per template it earns
(coupons/models/auto_issue.py), and, when a paid order is refunded, the withdrawal of what it
earned. Each is a few statements and issues nothing itself, so a sign-up or a payment is never
slowed or failed by issuing; the scheduler does the issuing (coupons/auto_issue/jobs.py)."""

import logging
from datetime import timedelta

from django.db import DatabaseError, transaction

from core import clock
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.auto_issue import AutoIssueTask

logger = logging.getLogger(__name__)


def signup_tasks(*, user_id: int) -> int:
    """A new account earns each sign-up template still open. Never raises: a sign-up is not
    refused for its coupons (a failure here is logged, and the account stays)."""
    try:
        with transaction.atomic():  # a savepoint: the account's own transaction goes on
            return _tasks_for(
                CouponTemplate.objects.filter(auto_issue=CouponTemplate.AutoIssue.SIGNUP),
                user_id=user_id,
                event=AutoIssueTask.Event.SIGNUP,
                order_id=0,
            )
    except DatabaseError:
        logger.exception("sign-up coupons of user %s not recorded", user_id)
        return 0


def paid_order_tasks(*, order_id: int, user_id: int, pay_amount: int) -> int:
    """A paid order earns each paid-order template open whose minimum it meets, once. Runs in
    the payment's transaction; a retried payment writes nothing twice."""
    return _tasks_for(
        CouponTemplate.objects.filter(
            auto_issue=CouponTemplate.AutoIssue.PAID_ORDER, auto_issue_min_pay__lte=pay_amount
        ),
        user_id=user_id,
        event=AutoIssueTask.Event.PAID_ORDER,
        order_id=order_id,
    )


def _tasks_for(templates, *, user_id: int, event: str, order_id: int) -> int:
    now = clock.now()
    template_ids = list(templates.filter(valid_until__gt=now).values_list("pk", flat=True))
    AutoIssueTask.objects.bulk_create(
        [
            AutoIssueTask(
                template_id=template_id,
                user_id=user_id,
                event=event,
                order_id=order_id,
                next_attempt_at=now,
            )
            for template_id in template_ids
        ],
        ignore_conflicts=True,  # the event seen before: its tasks stand
    )
    return len(template_ids)


def refunded_order_withdraw(*, order_id: int) -> int:
    """A refunded order earns nothing: its tasks not yet issued are withdrawn, and a coupon it
    earned is taken back whatever it is doing (coupon_take_back). Runs in the refund's
    transaction; returns how many tasks were withdrawn."""
    tasks = AutoIssueTask.objects.select_for_update().filter(
        order_id=order_id,
        event=AutoIssueTask.Event.PAID_ORDER,
        state__in=[AutoIssueTask.State.PENDING, AutoIssueTask.State.ISSUED],
    )
    withdrawn = 0
    for task in tasks.order_by("pk"):
        if task.state == AutoIssueTask.State.ISSUED and task.coupon_id is not None:
            coupon_take_back(task.coupon_id)
        AutoIssueTask.objects.filter(pk=task.pk).update(
            state=AutoIssueTask.State.WITHDRAWN, updated_at=clock.now()
        )
        withdrawn += 1
    return withdrawn


def coupon_take_back(coupon_id: int) -> bool:
    """Withdraw a coupon whatever it is doing: marked withdrawn and its use window ended now,
    so unused it shows as expired (every count stays true, as a deletion would not keep
    them), held by an unpaid order it cannot pay for it (orders' pay asks
    `coupons.ports.coupon_withdrawn`), and given back by a cancel or a refund it comes back
    expired. A window not yet open is moved to just before now; one already over is left.
    False when the coupon is gone."""
    coupon = UserCoupon.objects.select_for_update().filter(pk=coupon_id).first()
    if coupon is None:
        return False
    now = clock.now()
    window = {}
    if coupon.valid_until > now:
        window = {
            "valid_from": min(coupon.valid_from, now - timedelta(milliseconds=1)),
            "valid_until": now,
        }
    UserCoupon.objects.filter(pk=coupon.pk).update(withdrawn_at=now, updated_at=now, **window)
    return True
