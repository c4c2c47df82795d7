"""A Lua script's call as data, so that one part of the project can send another part's script
in its own Redis round trip (the claim's screen carries authentication's user-facts read)."""

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.exceptions import NoScriptError, ResponseError

# Sets a number only upward: the epochs the watch writes to each Redis (core/lua/).
RAISE_ONLY_SCRIPT = (Path(__file__).resolve().parent / "lua" / "raise_only.lua").read_text()


@functools.lru_cache(maxsize=32)
def script_sha(script: str) -> str:
    """The SHA1 Redis names a script by (EVALSHA): computed once per script, not per call."""
    return hashlib.sha1(script.encode()).hexdigest()


@dataclass(frozen=True)
class ScriptCall:
    script: str  # the Lua text
    keys: list[str]
    args: list
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", script_sha(self.script))


def calls_answered(client: redis.Redis, calls: list[ScriptCall]) -> list:
    """The calls' replies, sent in one round trip (EVALSHA each). A script Redis does not hold
    (after a restart or SCRIPT FLUSH) answers NOSCRIPT without running: that call alone is
    sent again, loading it, so no call runs twice. Raises the first other error, or what the
    connection raised. A single Redis's client (a cluster's calls each name their keys' node)."""
    replies = sent_together(client, calls)
    for index, (call, reply) in enumerate(zip(calls, replies, strict=True)):
        if isinstance(reply, NoScriptError):
            reply = replies[index] = client.register_script(call.script)(
                keys=call.keys, args=call.args
            )
        if isinstance(reply, Exception):
            raise reply
    return replies


def sent_together(client: redis.Redis, calls: list[ScriptCall]) -> list:
    """Each call's EVALSHA, written at once and read back in order, an error as its reply, on
    one of the pool's connections, under its retry policy (none for the clients made from
    URLs, ours: a call that may have run is never sent again): redis-py's pipeline and command
    objects cost the crowd's requests more than their round trip (decision 1034)."""
    commands = [("EVALSHA", call.sha, len(call.keys), *call.keys, *call.args) for call in calls]
    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        return connection.retry.call_with_retry(
            lambda: written_and_read(connection, commands),
            lambda _error: connection.disconnect(),
        )
    finally:
        pool.release(connection)


def written_and_read(connection: redis.Connection, commands: list[tuple]) -> list:
    """Every reply is read before any error is raised, so the connection never falls out of
    step with its replies."""
    connection.send_packed_command(connection.pack_commands(commands))
    replies: list = []
    for _ in commands:
        try:
            replies.append(connection.read_response())
        except ResponseError as error:
            replies.append(error)
    return replies
