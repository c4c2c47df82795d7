"""Every Lua script with a fixed set of keys refuses another number of them at once
(`assert(#KEYS == n)`), rather than reading nil keys: a caller that drifted from a script's
header fails loudly (issue 28)."""

from pathlib import Path

import pytest
import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parents[3]
KEYS_TAKEN = {
    "accounts/lua/user_facts_read.lua": 2,
    "accounts/lua/user_facts_write.lua": 2,
    "coupons/issuing/lua/claim.lua": 5,
    "coupons/issuing/lua/sync.lua": 5,
    "coupons/issuing/lua/terms.lua": 3,
}


@pytest.mark.parametrize(("path", "taken"), sorted(KEYS_TAKEN.items()))
def test_a_script_refuses_another_number_of_keys(path, taken):
    client = redis.Redis.from_url(settings.REDIS_URL)
    script = client.register_script((ROOT / path).read_text())

    for wrong in (taken - 1, taken + 1):
        with pytest.raises(redis.ResponseError, match=f"takes {taken} keys"):
            script(keys=[f"lua-key-count-test:{i}" for i in range(wrong)], args=[])
