"""What authentication needs of a user, kept in the cache's Redis as facts the database showed
(SPEC section 21; docs/decisions/0720-user-facts-in-redis.md): whether the account is active,
its token generation, the digest of its password that tokens carry, and what a User answers
without its row (username, is_staff, is_superuser).

Facts are written only by a database lookup holding the lease Redis handed out before the
lookup began, after the lookup's transaction commits, and live USER_FACTS_TTL (15 min) from
that read; a change of the user deletes the facts and the lease before it is written and
again after it commits (`user_facts_change`), so a lookup that may have read the user before
the change writes nothing. A change Redis did not confirm leaves a note in the database
(UserFactsToForget, written with the change) that the scheduler acts on within a second of
Redis answering (docs/decisions/1015-user-facts-live-long.md). A Redis that went back in time
(a snapshot restored, a replica promoted) holds facts from before changes it had forgotten:
the epoch watch finds it behind within a second and forgets every user's facts there
(docs/decisions/1018-a-redis-behind-is-a-new-redis.md). Missing facts, or Redis away: the
database lookup, as before. Every Redis error is logged and swallowed, and then the
cache's Redis is skipped for the back-off the throttles share (api.throttles.backoff): one
outage costs one timeout per process, not one per user of that Redis."""

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db import transaction
from django.utils import timezone
from django_redis import get_redis_connection

from accounts.models import UserFactsToForget
from api.throttles import backoff
from core.drawn_ids import drawn_hex
from core.redis_scripts import RAISE_ONLY_SCRIPT, ScriptCall, calls_answered

logger = logging.getLogger(__name__)

LUA_DIR = Path(__file__).resolve().parent / "lua"
READ_SCRIPT = (LUA_DIR / "user_facts_read.lua").read_text()
WRITE_SCRIPT = (LUA_DIR / "user_facts_write.lua").read_text()


@dataclass(frozen=True)
class UserFacts:
    user_id: int
    is_active: bool
    generation: int  # accounts.models.TokenGeneration
    password_digest: str  # what a token's REVOKE_TOKEN_CLAIM must equal
    username: str
    is_staff: bool
    is_superuser: bool

    def as_args(self) -> list:
        return [
            int(self.is_active),
            self.generation,
            self.password_digest,
            self.username,
            int(self.is_staff),
            int(self.is_superuser),
        ]

    @classmethod
    def from_reply(cls, user_id: int, reply: list) -> "UserFacts":
        active, generation, digest, username, staff, superuser = (_text(v) for v in reply)
        return cls(
            user_id=user_id,
            is_active=active == "1",
            generation=int(generation),
            password_digest=digest,
            username=username,
            is_staff=staff == "1",
            is_superuser=superuser == "1",
        )


def user_from_facts(facts: UserFacts):
    """A User built from the facts, with no query: its other fields are deferred, so a view
    that reads one (the email, say) loads it from the database then, as Django does for any
    deferred field."""
    user_model = get_user_model()
    known = {
        user_model._meta.pk.attname: facts.user_id,
        user_model.USERNAME_FIELD: facts.username,
        "is_active": facts.is_active,
        "is_staff": facts.is_staff,
        "is_superuser": facts.is_superuser,
    }
    # from_db takes the known values in the model's field order and defers the rest.
    names = [f.attname for f in user_model._meta.concrete_fields if f.attname in known]
    return user_model.from_db("default", names, [known[name] for name in names])


def user_known_by_id(user_id: int):
    """A User of which only the id is known, with no query (every other field deferred): for a
    request whose write checks the user itself (accounts.authentication.TokenCheck)."""
    user_model = get_user_model()
    return user_model.from_db("default", [user_model._meta.pk.attname], [user_id])


def _keys(user_id: int) -> list[str]:
    cache = caches["default"]
    return [cache.make_key(f"user-facts:{user_id}"), cache.make_key(f"user-facts-lease:{user_id}")]


def _run(script: str, keys: list[str], args: list):
    """The script's reply, or None when Redis is skipped or fails."""
    if backoff.skipping():
        return None
    try:
        client = get_redis_connection("default")
        return calls_answered(client, [ScriptCall(script, keys, args)])[0]
    except redis.RedisError as error:
        backoff.failed(error)
        return None


def user_facts_lookup(user_id: int) -> UserFacts | str | None:
    """The user's facts as Redis holds them; else the lease (a str) under which a database
    lookup that begins now may write them back; None when Redis is unavailable."""
    call = user_facts_read_call(user_id)
    reply = _run(call.script, call.keys, call.args)
    return None if reply is None else user_facts_of_reply(user_id, reply)


def user_facts_read_call(user_id: int) -> ScriptCall:
    """The read of `user_facts_lookup` as a script call, for a caller that sends it in a round
    trip of its own to the cache's Redis (the claim's screen); its reply goes to
    `user_facts_of_reply`."""
    lease_ms = int(settings.USER_FACTS_LEASE * 1000)
    return ScriptCall(READ_SCRIPT, _keys(user_id), [drawn_hex(), lease_ms])


def user_facts_of_reply(user_id: int, reply: list) -> UserFacts | str:
    """The facts, or the lease to write them back under, from the read script's reply."""
    if int(reply[0]) == 1:
        return UserFacts.from_reply(user_id, reply[1:])
    return _text(reply[1])


def user_facts_remember(facts: UserFacts, *, lease: str, read_at: float) -> None:
    """After the lookup's transaction commits: write back the facts it read (the lookup began
    at `read_at`, time.time(), after `lease` was handed out, which lives USER_FACTS_LEASE
    seconds). They expire USER_FACTS_TTL seconds after `read_at`, on Redis's clock."""
    expire_at_ms = int((read_at + settings.USER_FACTS_TTL) * 1000)

    def write() -> None:
        _run(WRITE_SCRIPT, _keys(facts.user_id), [lease, expire_at_ms, *facts.as_args()])

    transaction.on_commit(write)


def _forget(user_id: int) -> bool:
    """Delete the user's facts and lease; whether Redis confirmed it."""
    if backoff.skipping():
        return False
    try:
        get_redis_connection("default").delete(*_keys(user_id))
    except redis.RedisError as error:
        backoff.failed(error)
        return False
    return True


# The rows (UserFactsToForget) this thread wrote for a change not yet followed by its
# after-commit forget: user id -> row ids.
_rows_written = threading.local()


def _rows_of_this_thread() -> dict[int, list[int]]:
    if not hasattr(_rows_written, "by_user"):
        _rows_written.by_user = {}
    return _rows_written.by_user


def _note_to_forget(user_id: int) -> None:
    """A row saying the user's facts must go, in the current transaction (or committed at
    once, before the change is written, outside one)."""
    row = UserFactsToForget.objects.create(user_id=user_id)
    _rows_of_this_thread().setdefault(user_id, []).append(row.pk)


def user_facts_forget(user_id: int) -> None:
    """Before a change of the user's facts is written: forget them, so that no copy is read
    between the change's commit and `user_facts_forget_after_commit`, and note that they
    must go, with the change."""
    _note_to_forget(user_id)
    _forget(user_id)


def user_facts_forget_after_commit(user_id: int) -> None:
    """After a change of the user's facts is written, in its transaction (or just after an
    autocommit write): once it has committed, forget them again, which also voids every
    lease handed out before, and drop the change's note. When Redis does not confirm it, the
    note stays, and the scheduler forgets them as soon as Redis answers
    (`user_facts_forget_noted`); until then a request that reaches Redis may still be
    answered from the facts read before the change."""
    if user_id not in _rows_of_this_thread():
        _note_to_forget(user_id)  # no forget before it (a new user)
    rows = _rows_of_this_thread().pop(user_id)
    for _, callback, _ in transaction.get_connection().run_on_commit:
        if isinstance(callback, ForgetAfterCommit) and callback.forgets_user == user_id:
            callback.rows.extend(rows)  # this commit forgets the user already
            return
    transaction.on_commit(ForgetAfterCommit(user_id, rows))


class ForgetAfterCommit:
    """On a change's commit: forget the user's facts; once Redis confirmed it, drop the
    change's notes (`rows`)."""

    def __init__(self, user_id: int, rows: list[int]) -> None:
        self.forgets_user = user_id
        self.rows = rows

    def __call__(self) -> None:
        if _forget(self.forgets_user):
            UserFactsToForget.objects.filter(pk__in=self.rows).delete()
            return
        logger.warning(
            "user %s changed but Redis did not confirm: the scheduler forgets the cached"
            " facts once Redis answers",
            self.forgets_user,
        )


@contextmanager
def user_facts_change(user_id: int) -> Iterator[None]:
    """Wrap a write that changes the user's facts: forgotten before it and after its commit."""
    user_facts_forget(user_id)
    yield
    user_facts_forget_after_commit(user_id)


def user_facts_forget_all() -> int:
    """Forget every user's facts (after the database or the cache's Redis went back in time);
    how many. Raises when Redis fails."""
    connection = get_redis_connection("default")
    batch, forgotten = [], 0
    for key in connection.scan_iter(match=caches["default"].make_key("user-facts:*"), count=1000):
        batch.append(key)
        if len(batch) == 1000:
            forgotten += connection.delete(*batch)
            batch = []
    if batch:
        forgotten += connection.delete(*batch)
    return forgotten


def user_facts_epoch_key() -> str:
    return caches["default"].make_key("user-facts-epoch")


def user_facts_epoch() -> int | None:
    """The database's epoch as the cache's Redis last saw it (coupons/models/counter_epoch.py; None:
    none). Raises when Redis fails."""
    value = get_redis_connection("default").get(user_facts_epoch_key())
    return None if value is None else int(value)


def user_facts_epoch_raise(epoch: int) -> None:
    """Raise it, never lower it (core/lua/raise_only.lua). Raises when Redis fails."""
    get_redis_connection("default").register_script(RAISE_ONLY_SCRIPT)(
        keys=[user_facts_epoch_key()], args=[epoch]
    )


# A note is visible to the job once it committed, and one written outside a transaction
# commits before its change is written: a lookup in between could write back the facts of
# before the change. So a note younger than this is acted on but kept (forgotten again each
# run) until its change's own after-commit forget drops it or it has settled.
NOTES_SETTLE_SECONDS = 5
NOTES_PER_RUN = 1000


def user_facts_forget_noted() -> str | None:
    """The scheduler's job, every second: forget the facts of every user with a note (a change
    Redis did not confirm, or one still being written), and drop the settled notes. It asks
    Redis whatever the requests' back-off says: that back-off spares each request a timeout,
    while this job must find the first second Redis answers again. Raises when Redis fails
    (the scheduler logs it and the next run tries again)."""
    notes = list(
        UserFactsToForget.objects.order_by("pk").values_list("pk", "user_id", "created_at")[
            :NOTES_PER_RUN
        ]
    )
    if not notes:
        return None
    users = sorted({user_id for _, user_id, _ in notes})
    get_redis_connection("default").delete(*(key for user in users for key in _keys(user)))
    settled = timezone.now() - timedelta(seconds=NOTES_SETTLE_SECONDS)
    dropped, _ = UserFactsToForget.objects.filter(
        pk__in=[pk for pk, _, created_at in notes if created_at < settled]
    ).delete()
    if not dropped:
        return None
    return f"Forgot the cached facts of {len(users)} changed user(s) Redis had not confirmed."


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
