"""Script calls written at once and read back in order (core/redis_scripts.py, decision 1034),
on a redis-server of the test's own: an error is a reply in its place and the connection
stays in step; a script Redis lost is loaded and only its call sent again; a call whose reply
came too late is never sent again by the clients the settings make."""

import pytest
import redis
from redis.exceptions import ResponseError

from core.redis_scripts import ScriptCall, calls_answered, sent_together

pytestmark = pytest.mark.servers

REFUSED = ScriptCall("return redis.error_reply('refused')", [], [])
SEVEN = ScriptCall("return 7", [], [])
COUNTED = ScriptCall("return redis.call('INCR', KEYS[1])", ["counted"], [])


@pytest.fixture
def client(tmp_path):
    from localservers.redis_server import RedisServer

    server = RedisServer(tmp_path)
    server.start()
    # One connection in the pool: every call below goes over the same one.
    yield redis.Redis.from_url(server.url, max_connections=1)
    server.stop()


def test_an_error_is_the_reply_in_its_place_and_the_next_call_reads_its_own_reply(client):
    client.script_load(REFUSED.script)
    client.script_load(SEVEN.script)

    replies = sent_together(client, [REFUSED, SEVEN])

    assert isinstance(replies[0], ResponseError) and "refused" in str(replies[0])
    assert replies[1] == 7
    with pytest.raises(ResponseError, match="refused"):
        calls_answered(client, [REFUSED, SEVEN])
    assert calls_answered(client, [SEVEN, SEVEN]) == [7, 7]


def test_a_script_redis_lost_is_loaded_and_only_its_call_is_sent_again(client):
    assert calls_answered(client, [COUNTED, SEVEN]) == [1, 7]
    client.script_flush()

    assert calls_answered(client, [SEVEN, COUNTED]) == [7, 2]  # SEVEN loaded too, each once
    assert int(client.get("counted")) == 2


# Counts its call, then holds Redis for ARGV[1] microseconds: longer than the client waits.
COUNTED_THEN_SLOW = ScriptCall(
    """
    redis.call('INCR', KEYS[1])
    local started = redis.call('TIME')
    local now
    repeat
        now = redis.call('TIME')
    until (now[1] - started[1]) * 1000000 + (now[2] - started[2]) > tonumber(ARGV[1])
    return 1
    """,
    ["counted"],
    [1_000_000],  # ten times the clients' timeout: a test stalled for 0.9 s still times out
)


def counter_client(url: str) -> redis.Redis:
    from coupons.issuing.counter_setup import redis_client

    return redis_client(url, cluster=False, timeout=0.1)  # type: ignore[return-value]


def cache_client(url: str) -> redis.Redis:
    from django.conf import settings
    from django_redis.pool import get_connection_factory

    options = {**settings.CACHES["default"]["OPTIONS"], "SOCKET_TIMEOUT": 0.1}
    return get_connection_factory(options=options).connect(url)


@pytest.mark.parametrize("made_as", [counter_client, cache_client])
def test_a_script_that_may_have_run_is_never_sent_again(tmp_path, made_as):
    """The counter's and the cache's clients, made as the settings make them: a call whose
    reply does not come in time raises to the caller's back-off, never re-sent by redis-py
    (a client's default retry would run a throttle's count or a win's record twice)."""
    from localservers.redis_server import RedisServer

    server = RedisServer(tmp_path)
    server.start()
    try:
        client = made_as(server.url)
        calls_answered(client, [SEVEN])  # loaded, so the slow call below is sent once as EVALSHA
        client.script_load(COUNTED_THEN_SLOW.script)

        with pytest.raises(redis.TimeoutError):
            calls_answered(client, [COUNTED_THEN_SLOW])

        # Answered once the script has ended, and any call re-sent before it.
        reader = redis.Redis.from_url(server.url, socket_timeout=5)
        assert reader.get("counted") == b"1"
        # No retry at all: one after a network timeout, on a fresh connection, would send it
        # again while Redis is not busy (this script's hold fails such a retry's handshake).
        connection = client.connection_pool.get_connection()
        assert connection.retry.get_retries() == 0
        client.connection_pool.release(connection)
    finally:
        server.stop()
