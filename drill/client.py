"""One HTTP request of the drill and what came back, as the ledger keeps it."""

import http.client
import json
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Attempt:
    """One request sent: which command (`kind`), by whom, under which Idempotency-Key, and its
    answer (status 0: none at all, `error` says why)."""

    kind: str  # "claim", "checkout" or "pay"
    user_id: int
    key: str
    path: str
    body: str
    started: float  # time.monotonic()
    finished: float
    status: int
    code: str | None
    resource_id: int | None  # the coupon's or the order's id in a 2xx
    retry_after: str | None
    replayed: bool
    error: str | None
    final_pass: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def ambiguous(self) -> bool:
        """No definite answer: the command may or may not have taken effect."""
        return self.status in (0, 503) or self.code == "request_in_progress"


def send(
    base_port: int,
    *,
    kind: str,
    user_id: int,
    token: str,
    key: str,
    path: str,
    body: str = "",
    timeout: float = 40.0,
    final_pass: bool = False,
    sends_key: bool = True,
) -> tuple[Attempt, dict]:
    """POST `body` (JSON or empty) with the user's token and the key (not sent when
    `sends_key` is False: the ledger still names the attempt by it); the attempt and the
    answer's JSON body."""
    headers = {"Authorization": f"Bearer {token}"}
    if sends_key:
        headers["Idempotency-Key"] = key
    if body:
        headers["Content-Type"] = "application/json"
    started = time.monotonic()
    payload: dict = {}
    status, retry_after, replayed, error = 0, None, False, None
    connection = http.client.HTTPConnection("127.0.0.1", base_port, timeout=timeout)
    try:
        connection.request("POST", path, body=body or None, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        status = response.status
        retry_after = response.getheader("Retry-After")
        replayed = response.getheader("Idempotent-Replayed") == "true"
        payload = json.loads(raw) if raw.startswith(b"{") else {}
    except (OSError, http.client.HTTPException, ValueError) as failure:
        error = f"{type(failure).__name__}: {failure}"
    finally:
        connection.close()
    resource_id = payload.get("id") if 200 <= status < 300 else None
    attempt = Attempt(
        kind=kind, user_id=user_id, key=key, path=path, body=body, started=started,
        finished=time.monotonic(), status=status, code=payload.get("code"),
        resource_id=resource_id, retry_after=retry_after, replayed=replayed, error=error,
        final_pass=final_pass,
    )  # fmt: skip
    return attempt, payload


def get_json(base_port: int, *, token: str, path: str, timeout: float = 40.0) -> tuple[int, dict]:
    """GET `path` with the user's token: the status (0: no answer) and the JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", base_port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw.startswith(b"{") else {}
    except (OSError, http.client.HTTPException, ValueError):
        return 0, {}
    finally:
        connection.close()
