"""Copies of database facts kept in Redis under a lease (a template's terms for the claim
path): a copy is written back only by a read that showed the lease handed out before it
began, and a change voids every copy and lease around its commit. When Redis does not confirm
the void, the change returns only once every copy read before it has expired. (A user's facts
live longer and follow a note instead: accounts/user_facts.py, decision 1015.)"""

import logging
import time
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)

# Clocks of app nodes and Redis may be this far apart: a change Redis did not confirm waits
# this much longer than the lease.
CLOCK_MARGIN_SECONDS = 0.5


def after_commit_void_or_wait(
    void: Callable[[], bool], *, lease_seconds: float, what: str
) -> Callable[[], None]:
    """Register, on the current transaction's commit (at once outside one), `void`: the Redis
    call that voids the copies read before the commit, True when Redis confirmed it. When it
    did not, wait `lease_seconds` and the clock margin, so that no copy read before the change
    is still served when the change's caller goes on. Returns the registered callback."""

    def after_commit() -> None:
        if void():
            return
        wait = lease_seconds + CLOCK_MARGIN_SECONDS
        logger.warning(
            "%s changed but Redis did not confirm: waiting %.1fs for the cached copies to expire",
            what,
            wait,
        )
        time.sleep(wait)

    transaction.on_commit(after_commit)
    return after_commit
