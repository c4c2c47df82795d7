"""Progress lines on stderr, stamped with the time since the run started."""

import sys
import time

_started = time.monotonic()


def log(message: str) -> None:
    print(f"[bench {time.monotonic() - _started:6.1f}s] {message}", file=sys.stderr, flush=True)
