"""How an admin action's button looks in simpleui's action bar. simpleui draws an action with
nothing said about its looks as a plain grey button, so a grant, a pause and a download looked
alike and the bar read as disabled; it reads an action's `icon` and `type` (Element UI's
colours) instead. What each kind of action looks like is said here, once."""

from collections.abc import Callable
from enum import Enum
from typing import TypeVar

Action = TypeVar("Action", bound=Callable)


class ButtonLook(Enum):
    """(Element UI button type, Font Awesome icon: simpleui serves both itself)."""

    ISSUE = ("primary", "fas fa-gift")  # gives coupons out
    STOP = ("warning", "fas fa-pause")  # stops issuing, undone by RESUME
    RESUME = ("success", "fas fa-play")
    DOWNLOAD = ("", "fas fa-file-download")  # reads only, writes a file
    GIVE_BACK = ("danger", "fas fa-undo")  # cancels or refunds orders: money and stock move


def looks(look: ButtonLook) -> Callable[[Action], Action]:
    """Mark an admin action as `look` (use under @admin.action)."""

    def mark(action: Action) -> Action:
        kind, icon = look.value
        action.icon = icon  # type: ignore[attr-defined]
        if kind:
            action.type = kind  # type: ignore[attr-defined]
        return action

    return mark
