"""The claim's wing (SPEC sections 3, 4, 14, 15 and 21): every coupon a claim, a code or a
grant issues goes through here, and the rest of the project asks it only through the names
below (an import contract holds it; decision 1011).

    service.py        the service: claim, redeem, issue; the Redis screen first
    steps.py          an issue's steps: read, reach, early refusal, decide until settled
    screen_answers.py what the counter may answer (admitted, refused and why, throttled)
    counter.py        the Redis counter and its Lua scripts (lua/), counter_setup.py builds it
    redis_calls.py    its calls on a request's path: one or several per round trip, back-off
    terms_cache.py    a template's terms in Redis, leased and fenced by version
    claim_sql.py      the facts the decision reads, the guarded UPDATE and the coupon's row
    procedure.py      the same as one MySQL call (the procedure is written from them)
    decision.py       the decision that runs them, in
    transaction.py    the decision's own connection and short transaction
    after_decision.py what Redis is told after a decision
    reconcile.py      the scheduler's jobs that bring Redis back to the database
(the restore generation that Redis facts must match is a model: coupons/models/counter_epoch.py)
"""

from coupons.issuing.counter import REDIS_FAILURES
from coupons.issuing.counter_setup import coupon_counter
from coupons.issuing.decision import AlreadyGranted, GrantNote
from coupons.issuing.reconcile import (
    coupon_counters_follow_the_database,
    coupon_counters_forget_unknown,
    coupon_counters_rebuild,
    coupon_counters_reconcile,
)
from coupons.issuing.service import (
    coupon_claim,
    coupon_issue,
    coupon_redeem,
)
from coupons.issuing.terms_cache import next_version, terms_change, terms_publish_new

__all__ = [
    "REDIS_FAILURES",
    "AlreadyGranted",
    "GrantNote",
    "coupon_claim",
    "coupon_counter",
    "coupon_counters_follow_the_database",
    "coupon_counters_forget_unknown",
    "coupon_counters_rebuild",
    "coupon_counters_reconcile",
    "coupon_issue",
    "coupon_redeem",
    "next_version",
    "terms_change",
    "terms_publish_new",
]
