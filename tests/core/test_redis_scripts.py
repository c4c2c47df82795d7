"""Script calls written at once and read back in order (core/redis_scripts.py, decision 1034),
on a redis-server of the test's own: an error is a reply in its place and the connection
stays in step; a script Redis lost is loaded and only its call sent again."""

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
