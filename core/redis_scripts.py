"""A Lua script's call as data, so that one part of the project can send another part's script
in its own Redis round trip (the claim's screen carries authentication's user-facts read)."""

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ScriptCall:
    script: str  # the Lua text
    keys: list[str]
    args: list
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.script.encode()).hexdigest())
