"""Run actions in real threads, released together, each on its own database connections."""

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.db import connections

T = TypeVar("T")


def run_together(actions: Sequence[Callable[[], T]]) -> list[T]:
    """Start one thread per action, release them all at once with a barrier, wait for all,
    and return their results in the actions' order. Each thread closes its own connections;
    an exception in any action is raised here after every thread has finished."""
    barrier = threading.Barrier(len(actions))
    results: list = [None] * len(actions)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = actions[index]()
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
