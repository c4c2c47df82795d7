"""Every deployment value read from the environment, typed here: a value that is not what its
setting needs stops the process at start, naming the variable (ImproperlyConfigured), never
as a bare ValueError from deep in the settings. An empty value is the default, as unset."""

import os

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _given(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def env_str(name: str, default: str) -> str:
    given = _given(name)
    return default if given is None else given


def env_int(name: str, default: int) -> int:
    given = _given(name)
    if given is None:
        return default
    try:
        return int(given)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={given!r}: a whole number is needed") from None


def env_float(name: str, default: float) -> float:
    given = _given(name)
    if given is None:
        return default
    try:
        return float(given)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={given!r}: a number is needed") from None


def env_bool(name: str, default: bool = False) -> bool:
    given = _given(name)
    if given is None:
        return default
    if given.lower() in TRUE_WORDS:
        return True
    if given.lower() in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={given!r}: one of 1/0, true/false, yes/no, on/off")


def env_list(name: str, default: str) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]
