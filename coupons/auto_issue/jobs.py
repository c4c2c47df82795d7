"""The issuing of what events earned (the outbox, coupons/models/auto_issue.py), each task
exactly once through the issuing core, with the event as the coupon's source and reason (one
coupon per template, user and reason, so a task retried after a crash finds its coupon instead
of issuing a second). Run by the task queue (coupons/tasks.py, decision 1024): the relay,
every 2 s, takes each due task (a lease) and sends it to a worker, which issues it
(`auto_issue_taken`); a message lost with the broker, or a worker killed midway, leaves the
task to be taken again when its lease ends. `auto_issue_due` does both in one process.

What the template cannot issue (sold out, limit reached, ended, not a new
customer, no longer issued by that event) is refused for good; what may pass later (paused,
budget spent, not open yet, a fault) is tried again with a growing wait, until the template's
window has ended.

Locks: a task is taken in a short transaction of its own (its next attempt moved past a
lease, so another scheduler leaves it), the coupon is issued outside any transaction, as the
issuing core asks, and the outcome is settled in a second short transaction. The job never
holds a task's lock while it waits for a template's or a user's, so it cannot deadlock with
a payment or a refund, which take the user's row first."""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from core import clock
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimSoldOut,
    TemplateNotFound,
)
from coupons.grant_reasons import EVENT_REASON_PREFIX, reason_key
from coupons.issuing import AlreadyGranted, GrantNote, coupon_issue
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.auto_issue import AutoIssueTask

logger = logging.getLogger(__name__)

TASKS_PER_RUN = 500
MAX_WAIT_SECONDS = 600
FINAL = (ClaimSoldOut, ClaimLimitReached, ClaimNotEligible, TemplateNotFound)
EVENTS = {
    AutoIssueTask.Event.SIGNUP: (CouponTemplate.AutoIssue.SIGNUP, UserCoupon.Source.SIGNUP),
    AutoIssueTask.Event.PAID_ORDER: (
        CouponTemplate.AutoIssue.PAID_ORDER,
        UserCoupon.Source.ORDER,
    ),
}
NOT_BY_THIS_EVENT = "not_issued_by_event"
# The event's reason already names a coupon of another source (before grants refused it).
REASON_HELD = "reason_held_by_a_grant"


def event_reason(task: AutoIssueTask) -> str:
    """The coupon's reason: the event, and the order's number for a paid order. Prefixed so
    that no reason a staff member types for a grant is the same."""
    if task.event == AutoIssueTask.Event.PAID_ORDER:
        return f"{EVENT_REASON_PREFIX}order {task.order_id}"
    return f"{EVENT_REASON_PREFIX}signup"


def auto_issue_relay(
    send: Callable[[int, int], object], *, limit: int = TASKS_PER_RUN
) -> str | None:
    """Take up to `limit` due tasks, oldest due first, and `send(task_id, attempt)` each to a
    worker; a line for the log when any was sent. A task whose sending fails stays taken
    until its lease ends, then the relay takes it again: nothing is lost with the broker."""
    sent = 0
    for task_id in _due(limit):
        task = _take(task_id)
        if task is None:
            continue  # withdrawn, run or taken meanwhile
        send(task.pk, task.attempts)
        sent += 1
    return f"automatic issues: {sent} sent" if sent else None


def auto_issue_taken(task_id: int, attempt: int) -> str | None:
    """A worker's part: issue the task taken for `attempt`. Nothing when it is no longer that
    attempt's (settled, withdrawn, or taken again after its lease ended); a message delivered
    twice (a worker killed before it acknowledged) issues nothing twice: the reason's key."""
    task = AutoIssueTask.objects.filter(
        pk=task_id, state=AutoIssueTask.State.PENDING, attempts=attempt
    ).first()
    return None if task is None else _issue(task)


def auto_issue_due(*, limit: int = TASKS_PER_RUN) -> str | None:
    """The relay and the issuing in this process: take and issue up to `limit` due tasks; a
    line for the log when any ran. A task that fails in an unforeseen way is logged and left
    for its next attempt."""
    outcomes: dict[str, int] = {}
    for task_id in _due(limit):
        try:
            task = _take(task_id)
            state = None if task is None else _issue(task)
        except Exception:
            logger.exception("automatic issue %s failed", task_id)
            state = "failed"
        if state is not None:
            outcomes[state] = outcomes.get(state, 0) + 1
    if not outcomes:
        return None
    return "automatic issues: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))


def _due(limit: int) -> list[int]:
    return list(
        AutoIssueTask.objects.filter(
            state=AutoIssueTask.State.PENDING, next_attempt_at__lte=clock.now()
        )
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )


def _issue(task: AutoIssueTask) -> str:
    auto_issue, source = EVENTS[AutoIssueTask.Event(task.event)]
    if not CouponTemplate.objects.filter(pk=task.template_id, auto_issue=auto_issue).exists():
        return _settle(task, AutoIssueTask.State.REFUSED, error=NOT_BY_THIS_EVENT)
    reason = event_reason(task)
    # Issued before a crash kept the task from saying so: found first, by the reason's unique
    # key, since the rule would now refuse its second issue (the user's limit reached by it).
    held = _coupon_with_reason(task, reason)
    if held is not None:
        return _settle_held(task, held, source)
    try:
        coupon = coupon_issue(
            template_id=task.template_id,
            user_id=task.user_id,
            source=source,
            grant=GrantNote(granted_by_id=None, reason=reason),
        )
    except AlreadyGranted:  # issued meanwhile by a second delivery of the same task
        held = _coupon_with_reason(task, reason)
        if held is None:
            raise
        return _settle_held(task, held, source)
    except FINAL as refused:
        return _settle(task, AutoIssueTask.State.REFUSED, error=refused.code)
    except Exception as error:  # paused, budget, not open yet, a fault: try again later
        return _later(task, error)
    return _settle(task, AutoIssueTask.State.ISSUED, coupon_id=coupon.pk)


def _coupon_with_reason(task: AutoIssueTask, reason: str) -> tuple[int, str] | None:
    """The (id, source) of the user's coupon of the template with this reason, if any."""
    return (
        UserCoupon.objects.filter(
            template_id=task.template_id, user_id=task.user_id, grant_reason_key=reason_key(reason)
        )
        .values_list("pk", "source")
        .first()
    )


def _settle_held(task: AutoIssueTask, held: tuple[int, str], source: str) -> str:
    coupon_id, held_source = held
    if held_source != source:  # the reason is held by a coupon no event issued (a grant)
        return _settle(task, AutoIssueTask.State.REFUSED, error=REASON_HELD)
    return _settle(task, AutoIssueTask.State.ISSUED, coupon_id=coupon_id)


def _take(task_id: int) -> AutoIssueTask | None:
    """The task, if still pending and due, with its attempt counted and its next attempt
    moved past the lease; committed at once."""
    now = clock.now()
    with transaction.atomic():
        task = (
            AutoIssueTask.objects.select_for_update()
            .filter(pk=task_id, state=AutoIssueTask.State.PENDING, next_attempt_at__lte=now)
            .first()
        )
        if task is None:
            return None
        task.attempts += 1
        task.next_attempt_at = now + timedelta(seconds=settings.AUTO_ISSUE_LEASE_SECONDS)
        AutoIssueTask.objects.filter(pk=task_id).update(
            attempts=task.attempts, next_attempt_at=task.next_attempt_at, updated_at=now
        )
    return task


def _settle(
    task: AutoIssueTask, state: str, *, coupon_id: int | None = None, error: str = ""
) -> str:
    """Record the outcome, unless a refund withdrew the task meanwhile: then the coupon just
    issued for it is taken back at once."""
    from coupons.auto_issue.events import coupon_take_back

    with transaction.atomic():
        current = (
            AutoIssueTask.objects.select_for_update()
            .filter(pk=task.pk)
            .values_list("state", flat=True)
            .first()
        )
        if current != AutoIssueTask.State.PENDING:
            if coupon_id is not None:
                coupon_take_back(coupon_id)
            return str(current)
        AutoIssueTask.objects.filter(pk=task.pk).update(
            state=state, coupon_id=coupon_id, last_error=error, updated_at=clock.now()
        )
    return state


def _later(task: AutoIssueTask, error: Exception) -> str:
    """Wait 2, 4, 8 ... up to MAX_WAIT_SECONDS; once the template's window has ended (or it is
    gone), refuse for good."""
    now = clock.now()
    if not CouponTemplate.objects.filter(pk=task.template_id, valid_until__gt=now).exists():
        return _settle(task, AutoIssueTask.State.REFUSED, error=ClaimNotInWindow.code)
    wait = min(2**task.attempts, MAX_WAIT_SECONDS)
    code = getattr(error, "code", None)
    if code is None:
        logger.warning("automatic issue %s failed, again in %s s: %r", task.pk, wait, error)
    _retry_at(task.pk, now + timedelta(seconds=wait), str(code or type(error).__name__))
    return "retry"


def _retry_at(task_id: int, moment: datetime, error: str) -> None:
    AutoIssueTask.objects.filter(pk=task_id, state=AutoIssueTask.State.PENDING).update(
        next_attempt_at=moment, last_error=error[:255], updated_at=clock.now()
    )
