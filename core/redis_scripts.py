"""A Lua script's call as data, so that one part of the project can send another part's script
in its own Redis round trip (the claim's screen carries authentication's user-facts read)."""

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

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
