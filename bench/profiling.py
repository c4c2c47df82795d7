"""`--profile`: sample every app server worker with py-spy while one scenario runs, keep the
profile (speedscope JSON, open it at speedscope.app) and summarize where request-serving
threads spent their wall time."""

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.progress import log
from bench.results import Profile

# A sample belongs to a request when Django's handler, or the claim's lean route in front of
# it (coupons/api/claim_route.py), is on its stack.
REQUEST_FRAMES = frozenset({"BaseHandler.get_response", "ClaimRoute.__call__"})


def py_spy() -> str | None:
    return shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")


@contextmanager
def profiled(master_pid: int, output: Path, into: "ProfileSlot") -> Iterator[None]:
    """Record the workers of the server's master `master_pid` (idle threads included, so lock
    and I/O waits show) while the block runs; put a summary in `into.profile`. Sampling
    costs CPU: a profiled run's figures are slower than an unprofiled one's."""
    executable = py_spy()
    if executable is None:
        log("py-spy is not installed: no profile (pip install -r requirements-dev.txt)")
        yield
        return
    command = [executable, "record", "--pid", str(master_pid), "--subprocesses", "--idle"]
    command += ["--nonblocking", "--rate", "200", "--format", "speedscope", "-o", str(output)]
    recorder = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    time.sleep(1.0)  # attaching to each worker takes a moment
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        try:
            _, errors = recorder.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            recorder.kill()
            _, errors = recorder.communicate()
    if not output.exists():
        log(f"py-spy wrote no profile: {errors.decode(errors='replace')[-500:]}")
        return
    into.profile = summarize(output)
    log(f"profile written to {output}")
    for label, share in into.profile.markers.items():
        log(f"  {share:6.1%}  {label}")
    for name, share in into.profile.top_self[:8]:
        log(f"  {share:6.1%}  self: {name}")


# Functions whose inclusive share of request time answers "where did the time go".
MARKERS = {
    "JWT authentication (incl. its user query)": "JWTAuthentication.authenticate",
    "a token's signature checked (PyJWT)": "signature_checked",
    "throttles (DRF)": "APIView.check_throttles",
    "claim (coupons.issuing.coupon_claim)": "coupon_claim",
    "claim: the Redis screen": "claim_screen",
    "claim: facts read before the decision": "claim_facts",
    "claim: decision transaction (row lock, insert, commit)": "decide",
    "claim: the decision's one call (MySQL procedure)": "decide_in_one_call",
    "Redis pipelines (redis-py)": "Pipeline.execute",
    "waiting on MariaDB (MySQLdb query)": "Connection.query",
    "connection health checks (is_usable)": "DatabaseWrapper.is_usable",
    "ORM building SQL (SQLCompiler.as_sql)": "SQLCompiler.as_sql",
    "4xx warning log (django.request)": "log_response",
}


class ProfileSlot:
    """Where `profiled` leaves its summary once the block has run; None without py-spy."""

    profile: Profile | None = None


def summarize(path: Path, top: int = 12) -> Profile:
    """Shares of request-serving samples (wall time, idle included): inclusive for each marker
    function, and by innermost frame (self time) for the top ones."""
    document = json.loads(path.read_text())
    frames = document["shared"]["frames"]
    names = [f"{frame['name']} ({Path(frame.get('file', '?')).name})" for frame in frames]
    request_frames = {i for i, frame in enumerate(frames) if frame["name"] in REQUEST_FRAMES}
    marker_frames = {
        label: {i for i, frame in enumerate(frames) if frame["name"] == function}
        for label, function in MARKERS.items()
    }
    markers: Counter[str] = Counter()
    innermost: Counter[str] = Counter()
    requests = 0.0
    for profile in document["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            if not request_frames.intersection(stack):
                continue
            requests += weight
            innermost[names[stack[-1]]] += weight
            for label, indexes in marker_frames.items():
                if indexes.intersection(stack):
                    markers[label] += weight
    if not requests:
        return Profile(file=path.name, request_thread_seconds=0.0, markers={}, top_self=())
    return Profile(
        file=path.name,
        request_thread_seconds=round(requests, 2),
        markers={label: round(markers[label] / requests, 4) for label in MARKERS},
        top_self=tuple(
            (name, round(weight / requests, 4)) for name, weight in innermost.most_common(top)
        ),
    )
