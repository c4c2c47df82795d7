"""Polling until something holds, with a deadline: the one loop the tests, the servers of our
own and their callers wait with."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Call `condition` every `interval` seconds until it returns something truthy, and return
    that. Exceptions of the `ignoring` types count as "not yet" (a server still booting refuses
    connections); any other exception propagates at once (a server that exited will never
    answer). After `timeout` seconds, TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except ignoring:
            pass
        else:
            if result:
                return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
