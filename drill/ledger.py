"""The client-side ledger: every request the drill sent and what came back, and the kills.
The checks (drill.checks) hold it against the database after recovery."""

import json
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from drill.client import Attempt

# What the rule explains besides success, per command: a refusal the claim rule or the
# order rules give (SPEC sections 4, 10, 19), or a retry meeting its own request still
# recorded as running (the Idempotency-Key lease, decision 0322). Anything else is a finding;
# 503 is explained only with Retry-After, and no answer at all never is.
EXPLAINED = {
    "claim": {(201, None), (409, "sold_out"), (409, "limit_reached")},
    "checkout": {(201, None), (409, "coupon_used"), (409, "too_many_unpaid_orders")},
    "pay": {(200, None), (409, "invalid_state")},
}
IN_PROGRESS = (409, "request_in_progress")
RECOVERY_LIMIT = 5.0  # seconds from a fault of one node to the next 201 claim (SPEC section 22)
# Two nodes lost at once, or all three: the supervisor heals it without a human (issue 40).
HEAL_LIMIT = 60.0


def explained(attempt: Attempt) -> bool:
    if attempt.status == 503:
        return bool(attempt.retry_after)
    answer = (attempt.status, None if attempt.ok else attempt.code)
    return answer in EXPLAINED[attempt.kind] or answer == IN_PROGRESS


@dataclass
class Kill:
    """A fault: "kill" (SIGKILL of the writer), "freeze" (SIGSTOP of the writer), "thaw"
    (SIGCONT after a freeze), "backup kill" (SIGKILL of a node HAProxy does not write to),
    "double kill" (the writer and a backup at once) or "crash" (every node at once); `node`
    names the nodes (node1, node1+node3, all)."""

    node: str
    at: float  # time.monotonic() just before the signal
    recovered_in: float | None = None  # seconds to the first 201 claim sent after it
    fault: str = "kill"
    bound: float = RECOVERY_LIMIT  # the promise: claims again within this many seconds


def faults_named(fault: str) -> str:
    """A fault's plural as the report counts it: kills, freezes, crashes."""
    return f"{fault}es" if fault.endswith(("sh", "ch", "s")) else f"{fault}s"


@dataclass(frozen=True)
class ReadBack:
    """A shopper's list read through the replica URL right after its own claims: the claims
    acknowledged before the read, and what the list said it holds."""

    user_id: int
    acknowledged: int
    listed: int


@dataclass
class WriterMove:
    """HAProxy's writer changed from one node to another (None readings in between skipped)."""

    at: float  # time.monotonic() when the new writer was first seen
    from_node: int
    to_node: int


@dataclass
class Ledger:
    attempts: list[Attempt] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    moves: list[WriterMove] = field(default_factory=list)
    reads: list[ReadBack] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, attempt: Attempt) -> None:
        with self.lock:
            self.attempts.append(attempt)

    def kill(
        self, node: str, at: float, fault: str = "kill", bound: float = RECOVERY_LIMIT
    ) -> Kill:
        kill = Kill(node=node, at=at, fault=fault, bound=bound)
        with self.lock:
            self.kills.append(kill)
        return kill

    def snapshot(self) -> list[Attempt]:
        with self.lock:
            return list(self.attempts)

    def first_claim_after(self, moment: float) -> float | None:
        """Seconds from `moment` to the end of the first 201 claim sent at or after it."""
        ends = [
            attempt.finished
            for attempt in self.snapshot()
            if attempt.kind == "claim" and attempt.ok and attempt.started >= moment
        ]
        return min(ends) - moment if ends else None

    def by_status(self) -> Counter[tuple[str, str]]:
        """(command, "status code") -> how many answers; status 0 is "no answer"."""
        counts: Counter[tuple[str, str]] = Counter()
        for attempt in self.snapshot():
            label = "no answer" if attempt.status == 0 else str(attempt.status)
            if attempt.code and not attempt.ok:
                label += f" {attempt.code}"
            counts[(attempt.kind, label)] += 1
        return counts

    def dump(self, path: Path) -> None:
        """Every attempt, kill and writer move as JSON lines, to read a finding after the run."""
        with path.open("w") as out:
            for kill in self.kills:
                out.write(json.dumps({"kill": asdict(kill)}) + "\n")
            for move in self.moves:
                out.write(json.dumps({"writer_move": asdict(move)}) + "\n")
            for read in self.reads:
                out.write(json.dumps({"read_back": asdict(read)}) + "\n")
            for attempt in self.snapshot():
                out.write(json.dumps(asdict(attempt)) + "\n")
