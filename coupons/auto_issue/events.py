"""What an event writes, in the event's own transaction: one task per template it earns
(coupons/auto_issue/models.py), and, when a paid order is refunded, the withdrawal of what it
earned. Each is a few statements and issues nothing itself, so a sign-up or a payment is never
slowed or failed by issuing; the scheduler does the issuing (coupons/auto_issue/jobs.py)."""

import logging
from datetime import timedelta

from django.db import DatabaseError, transaction

from core import clock
from coupons.auto_issue.models import AutoIssueTask
from coupons.models import CouponTemplate, UserCoupon

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
    earned that is still unused is taken back (coupon_take_back; a used one stays). Runs in
    the refund's transaction; returns how many tasks were withdrawn."""
    tasks = AutoIssueTask.objects.select_for_update().filter(
        order_id=order_id,
        event=AutoIssueTask.Event.PAID_ORDER,
        state__in=[AutoIssueTask.State.PENDING, AutoIssueTask.State.ISSUED],
    )
    withdrawn = 0
    for task in tasks.order_by("pk"):
        if task.state == AutoIssueTask.State.ISSUED and task.coupon_id is not None:
            if not coupon_take_back(task.coupon_id):
                continue  # used already: it stays
        AutoIssueTask.objects.filter(pk=task.pk).update(
            state=AutoIssueTask.State.WITHDRAWN, updated_at=clock.now()
        )
        withdrawn += 1
    return withdrawn


def coupon_take_back(coupon_id: int) -> bool:
    """End an unused coupon's use window now (it shows as expired; every count stays true,
    as a deletion would not keep them). A window not yet open is moved to just before now; a
    window already over is left. False when the coupon is used (or gone)."""
    coupon = UserCoupon.objects.filter(pk=coupon_id, status=UserCoupon.Status.UNUSED).first()
    if coupon is None:
        return False
    now = clock.now()
    if coupon.valid_until <= now:
        return True
    valid_from = min(coupon.valid_from, now - timedelta(milliseconds=1))
    UserCoupon.objects.filter(pk=coupon.pk, status=UserCoupon.Status.UNUSED).update(
        valid_from=valid_from, valid_until=now, updated_at=now
    )
    return True
