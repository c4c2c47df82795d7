"""Idempotency-Key for POST commands (SPEC section 12): a retried request gets the first
answer again instead of running twice.

Apply with one line, `@idempotent`, on a DRF view's handler method. The handler runs after
authentication and permissions, so records are per user. The record is inserted and committed
in its own transaction before the handler runs, so a concurrent request with the same key
meets the unique (user, key) index and is told 409 `request_in_progress`; the answer is stored
after the handler returns. 5xx, 429 and 404 answers are not kept (the record is deleted): the
attempt committed nothing, so running it again is safe.

A command with an effect (a claim, a checkout, a payment) is decorated
`@idempotent(effect_answer=...)`: its handler is given the record as an argument
(`effect_record`, an EffectRecord or None), hands it to its service, which writes the effect's
id into it inside the effect's own transaction (`EffectRecord.write`, or the claim's procedure
given its id), so whatever committed, the record says so. A record with an effect
is never dropped by a 5xx nor freed by the lease; a retry that finds it without a stored
answer (the answer was lost with the database between the two writes) gets the effect's
answer rendered again by `effect_answer`. Nothing runs twice.

A record still without an answer or an effect is a lease of IDEMPOTENCY_LEASE_SECONDS, not a
lock for the key's lifetime: when its request died (the worker was stopped) or its 5xx could
not be dropped (the database still away), the key is free again after the lease, so a client
that retries a 5xx is never locked out for a day (docs/decisions/0322-idempotency-lease.md).
"""

import functools
import hashlib
import itertools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, InterfaceError, connection, transaction
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from api.errors import IdempotencyKeyInvalid, IdempotencyKeyReused, RequestInProgress
from api.models import IdempotencyRecord
from api.throttles import throttle_hit
from core import clock
from core.database_errors import database_unavailable
from core.metrics import idempotent_replays_total

logger = logging.getLogger(__name__)

KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 64
# Printable ASCII, space included (HTTP strips a header value's outer spaces anyway).
PRINTABLE_ASCII = frozenset(chr(code) for code in range(0x20, 0x7F))
KEY_RULE = f"Must be 1 to {MAX_KEY_LENGTH} printable ASCII characters (space to tilde)."


# Answers of requests that did nothing, so running them again is safe. 404 too: a fresh key
# per request for a missing order was a 24-hour row each (decision 0635).
NOT_KEPT_STATUSES = frozenset({404, 429, *range(500, 600)})


@dataclass(frozen=True)
class StoredAnswer:
    status: int
    body: str


@dataclass(frozen=True)
class CommittedEffect:
    """An earlier use of the key whose effect committed but whose answer was never stored."""

    effect_id: int


@dataclass(frozen=True)
class EffectRecord:
    """The Idempotency-Key record of the command being served, which its service writes the
    effect's id into. Handed from the decorator to the handler to the service, as an argument."""

    record_id: int

    def write(self, *, effect_id: int, using: str = "default") -> None:
        """Write the effect's id into the record. Must run inside the effect's own transaction
        (on `using`), so the two commit together. Raises RequestInProgress, which rolls the
        effect back, when the record is gone (a retry after the lease took the key)."""
        record = IdempotencyRecord.objects.using(using).filter(pk=self.record_id)
        if not record.update(effect_id=effect_id):
            # The lease ended and a retry took the key over: it runs the command now, so this
            # effect must not commit beside it (raised inside the effect's transaction).
            raise RequestInProgress()


def effect_record_write(
    record: EffectRecord | None, *, effect_id: int, using: str = "default"
) -> None:
    """`record.write(...)`, or nothing for a command that came without an Idempotency-Key."""
    if record is not None:
        record.write(effect_id=effect_id, using=using)


# (view, request, effect_id, *args, **kwargs) -> the answer the command gives for that effect.
EffectAnswer = Callable[..., Response]


def idempotent(handler: Callable | None = None, *, effect_answer: EffectAnswer | None = None):
    """Decorate a DRF view handler (`def post(self, request, ...)`) to honour Idempotency-Key.
    Without the header the handler runs as before. With `effect_answer`, the handler takes
    `effect_record` (None without the header), its service records its effect there in its
    own transaction, and a retry that finds the effect without an answer is answered by
    `effect_answer(view, request, effect_id, ...)`."""
    if handler is None:
        return functools.partial(idempotent, effect_answer=effect_answer)

    @functools.wraps(handler)
    def wrapper(view, request: Request, *args, **kwargs) -> Response:
        key = request.headers.get(KEY_HEADER)
        if key is None or not request.user.is_authenticated:
            if effect_answer is not None:
                kwargs["effect_record"] = None
            return handler(view, request, *args, **kwargs)
        key_validate(key)
        begun = record_begin(
            user_id=request.user.pk, key=key, request_digest=request_digest(request)
        )
        if isinstance(begun, StoredAnswer):
            idempotent_replays_total.labels("answer").inc()
            return Response(
                json.loads(begun.body), status=begun.status, headers={REPLAYED_HEADER: "true"}
            )
        if isinstance(begun, CommittedEffect):
            if effect_answer is None:  # only a command with an answer records an effect
                raise RequestInProgress()
            response = effect_answer(view, request, begun.effect_id, *args, **kwargs)
            idempotent_replays_total.labels("effect").inc()
            response[REPLAYED_HEADER] = "true"
            return response
        # No answer at all (a worker stopped midway raises SystemExit here)
        # leaves the record "in progress": the work may have committed, so a retry must not
        # run it again until the lease ends; an effect that did commit holds the key for good.
        if effect_answer is not None:
            kwargs["effect_record"] = EffectRecord(begun.pk)
        try:
            response = handler(view, request, *args, **kwargs)
        except Exception as error:
            # Rendered here (as DRF would after us) so that a 4xx is kept like any answer.
            response = view.handle_exception(error)
        record_finish(record_id=begun.pk, response=response, user_id=request.user.pk)
        return response

    # Read by the schema generator (getattr) to document the header.
    setattr(wrapper, "idempotent", True)  # noqa: B010
    return wrapper


def key_validate(key: str) -> None:
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not set(key) <= PRINTABLE_ASCII:
        raise IdempotencyKeyInvalid(fields={KEY_HEADER: [KEY_RULE]})


def request_digest(request: Request) -> str:
    """What makes two requests "the same": method, path with query string, and body bytes."""
    digest = hashlib.sha256()
    for part in (
        (request.method or "").encode(),
        request.get_full_path().encode(),
        request._request.body,
    ):
        digest.update(len(part).to_bytes(8, "big"))  # length-prefixed: no ambiguous joins
        digest.update(part)
    return digest.hexdigest()


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def key_lifetime() -> timedelta:
    return timedelta(hours=settings.IDEMPOTENCY_KEY_HOURS)


def lease() -> timedelta:
    return timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS)


def record_is_stale(record: IdempotencyRecord, *, now: datetime) -> bool:
    """Past the key's lifetime, or still without an answer or an effect after the lease (its
    request failed or died with nothing committed): the key may be taken again."""
    if record.created_at <= now - key_lifetime():
        return True
    return (
        record.response_status is None
        and record.effect_id is None
        and record.created_at <= now - lease()
    )


def record_begin(
    *, user_id: int, key: str, request_digest: str
) -> IdempotencyRecord | StoredAnswer | CommittedEffect:
    """Claim the key for this request (committed at once), or say what the earlier use of the
    key means for it: its stored answer, its committed effect without an answer, 422 for a
    different request, 409 while it runs. Must run outside any transaction that the request's
    work uses."""
    digest = key_digest(key)
    # Twice at most: the row found may be expired (deleted here) or deleted by its own 5xx
    # between our insert and our read, and then the key is free to take.
    for _ in range(2):
        now = clock.now()
        try:
            with transaction.atomic():
                return IdempotencyRecord.objects.create(
                    user_id=user_id,
                    key_digest=digest,
                    key=key,
                    request_digest=request_digest,
                    created_at=now,
                )
        except IntegrityError:
            pass
        earlier = IdempotencyRecord.objects.filter(user_id=user_id, key_digest=digest).first()
        if earlier is None:
            continue
        if record_is_stale(earlier, now=now):
            # Guarded: only the row as read here, not one a concurrent request took over.
            IdempotencyRecord.objects.filter(
                pk=earlier.pk,
                created_at=earlier.created_at,
                response_status=earlier.response_status,
                effect_id=earlier.effect_id,  # an effect that committed meanwhile keeps it
            ).delete()
            continue
        if earlier.request_digest != request_digest:
            raise IdempotencyKeyReused()
        # record_finish writes the status and the body together.
        if earlier.response_status is None or earlier.response_body is None:
            if earlier.effect_id is not None:
                return CommittedEffect(earlier.effect_id)
            raise RequestInProgress()
        return StoredAnswer(status=earlier.response_status, body=earlier.response_body)
    raise RequestInProgress()


# How long an answer that must be kept may wait for the database to take it again: longer
# than a writer failover (about 3 s behind HAProxy, docs/measurements/
# 2026-12-01-failover-drill.md), short enough to hold one thread, not the worker.
KEEP_ANSWER_SECONDS = 5.0
KEEP_ANSWER_PAUSE = 0.5


def record_finish(*, record_id: int, response: Response, user_id: int) -> None:
    """Keep the answer for replays, or drop the record for a 5xx, a 429 or a 404 (the request
    did nothing: a throttle counted in the handler, SPEC section 15, must not make its answer
    the key's for good, and a missing order must not buy a row for a day), or for a refusal
    (4xx) past the user's `idempotent_refusals` rate (a refusal changed nothing, so its retry
    may run again; a flood of refusals with fresh keys must not buy a row each for a day),
    unless the record holds an effect: a 5xx after the effect's commit (the connection lost
    with the answer) keeps the record, and the retry replays the effect. A failure to write
    it is logged and the real answer still goes out: the work is done and the client must hear
    so. An answer to keep is first tried again on a new
    connection for up to KEEP_ANSWER_SECONDS, so that a switch of the database's writer
    between the work's commit and this write does not leave the key "in progress" (retried
    after the lease, the work would run a second time: decision 0322); the record stays so
    only when the database stays away longer."""
    keep = isinstance(response, Response) and response.status_code not in NOT_KEPT_STATUSES
    if keep and response.status_code >= 400:
        keep = throttle_hit(scope="idempotent_refusals", identity=str(user_id)) is None
    deadline = time.monotonic() + KEEP_ANSWER_SECONDS
    for attempt in itertools.count():
        try:
            if not keep:
                IdempotencyRecord.objects.filter(pk=record_id, effect_id__isnull=True).delete()
                return
            IdempotencyRecord.objects.filter(pk=record_id).update(
                response_status=response.status_code,
                response_body=json.dumps(response.data, cls=JSONEncoder),
                completed_at=clock.now(),
            )
            return
        except (DatabaseError, InterfaceError) as error:
            if keep and database_unavailable(error) and time.monotonic() < deadline:
                connection.close()  # the broken one; the next query connects again
                if attempt:
                    time.sleep(KEEP_ANSWER_PAUSE)
                continue
            # One line, no traceback: during a database outage this repeats per request.
            logger.error(
                "Could not record the answer (%s) of idempotency record %s: %s",
                getattr(response, "status_code", None),
                record_id,
                error,
            )
            return


def records_purge(*, batch_size: int = 1000) -> int:
    """Delete the records older than the key lifetime, in batches; returns how many. Each batch
    is its own statement, so no long lock."""
    cutoff = clock.now() - key_lifetime()
    deleted = 0
    while True:
        ids = list(
            IdempotencyRecord.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        if not ids:
            return deleted
        deleted += IdempotencyRecord.objects.filter(pk__in=ids).delete()[0]
