"""The scheduler's job (SCHEDULED_JOBS, every 2 s): issue the tasks that are due, each exactly
once through the issuing core, with the event as the coupon's source and reason (one coupon
per template, user and reason, so a task retried after a crash finds its coupon instead of
issuing a second). What the template cannot issue (sold out, limit reached, ended, not a new
customer) is refused for good; what may pass later (paused, budget spent, not open yet, a
fault) is tried again with a growing wait, until the template's window has ended."""

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q

from core import clock
from coupons.auto_issue.models import AutoIssueTask
from coupons.decision import AlreadyGranted, GrantNote
from coupons.errors import (
    ClaimLimitReached,
    ClaimNotEligible,
    ClaimNotInWindow,
    ClaimSoldOut,
    TemplateNotFound,
)
from coupons.grant_reasons import reason_key
from coupons.models import CouponTemplate, UserCoupon
from coupons.services.issuing import coupon_issue

logger = logging.getLogger(__name__)

TASKS_PER_RUN = 500
MAX_WAIT_SECONDS = 600
FINAL = (ClaimSoldOut, ClaimLimitReached, ClaimNotEligible, TemplateNotFound)
SOURCES = {
    AutoIssueTask.Event.SIGNUP: UserCoupon.Source.SIGNUP,
    AutoIssueTask.Event.PAID_ORDER: UserCoupon.Source.ORDER,
}


def event_reason(task: AutoIssueTask) -> str:
    """The coupon's reason: the event, and the order's number for a paid order."""
    if task.event == AutoIssueTask.Event.PAID_ORDER:
        return f"order {task.order_id}"
    return "signup"


def auto_issue_due(*, limit: int = TASKS_PER_RUN) -> str | None:
    """Issue up to `limit` due tasks, oldest due first; a line for the log when any ran."""
    now = clock.now()
    due = list(
        AutoIssueTask.objects.filter(state=AutoIssueTask.State.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    outcomes: dict[str, int] = {}
    for task_id in due:
        state = _run(task_id)
        if state is not None:
            outcomes[state] = outcomes.get(state, 0) + 1
    if not outcomes:
        return None
    return "automatic issues: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))


def _run(task_id: int) -> str | None:
    """One task, under its row lock (a refund of its order waits, then sees the outcome)."""
    with transaction.atomic():
        task = (
            AutoIssueTask.objects.select_for_update()
            .filter(pk=task_id, state=AutoIssueTask.State.PENDING)
            .first()
        )
        if task is None:
            return None  # withdrawn or run meanwhile
        now = clock.now()
        try:
            coupon = coupon_issue(
                template_id=task.template_id,
                user_id=task.user_id,
                source=SOURCES[AutoIssueTask.Event(task.event)],
                grant=GrantNote(granted_by_id=None, reason=event_reason(task)),
            )
            coupon_id: int | None = coupon.pk
        except AlreadyGranted:  # issued before a crash kept the task from saying so
            coupon_id = (
                UserCoupon.objects.filter(
                    template_id=task.template_id,
                    user_id=task.user_id,
                    grant_reason_key=reason_key(event_reason(task)),
                )
                .values_list("pk", flat=True)
                .first()
            )
        except FINAL as refused:
            return _settle(task, AutoIssueTask.State.REFUSED, error=refused.code)
        except Exception as error:  # paused, budget, not open yet, a fault: try again later
            return _later(task, error, now=now)
        return _settle(task, AutoIssueTask.State.ISSUED, coupon_id=coupon_id)


def _settle(
    task: AutoIssueTask, state: str, *, coupon_id: int | None = None, error: str = ""
) -> str:
    AutoIssueTask.objects.filter(pk=task.pk).update(
        state=state,
        coupon_id=coupon_id,
        attempts=task.attempts + 1,
        last_error=error,
        updated_at=clock.now(),
    )
    return state


def _later(task: AutoIssueTask, error: Exception, *, now) -> str:
    """Wait 2, 4, 8 ... up to MAX_WAIT_SECONDS; once the template's window has ended (or it is
    gone), refuse for good."""
    ended = not CouponTemplate.objects.filter(Q(valid_until__gt=now), pk=task.template_id).exists()
    if ended:
        return _settle(task, AutoIssueTask.State.REFUSED, error=ClaimNotInWindow.code)
    wait = min(2 ** (task.attempts + 1), MAX_WAIT_SECONDS)
    code = getattr(error, "code", type(error).__name__)
    if not hasattr(error, "code"):
        logger.warning("automatic issue %s failed, again in %s s: %r", task.pk, wait, error)
    AutoIssueTask.objects.filter(pk=task.pk).update(
        attempts=task.attempts + 1,
        next_attempt_at=now + timedelta(seconds=wait),
        last_error=str(code)[:255],
        updated_at=now,
    )
    return "retry"
