"""When two grant reasons are the same reason (SPEC section 19): after trimming and Unicode
normalisation (NFKC, then case folding), so "Late delivery", "late delivery " and the
full-width "Ｌａｔｅ delivery" are one reason on every database, whatever its collation.

The reason is stored as the operator typed it (trimmed); its key, a digest of the normalised
text, is what the unique (template, user, key) index compares."""

import hashlib
import unicodedata

# The longest reason a grant keeps (coupons.models.UserCoupon.grant_reason).
GRANT_REASON_MAX_LENGTH = 255


def reason_normalised(reason: str) -> str:
    # NFKC again after casefold: folding can produce text that is no longer NFKC.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", reason).casefold())
    return folded.strip()


# Events' coupons carry reasons with this prefix (coupons/auto_issue/jobs.py event_reason):
# a grant's reason never begins with it, or it could stand for an event's coupon.
EVENT_REASON_PREFIX = "auto:"


def reason_kept_for_events(reason: str) -> bool:
    """Whether the reason, folded as reasons are compared and with every space removed,
    begins with EVENT_REASON_PREFIX ("AUTO:ORDER 52", " auto : signup", full-width letters)."""
    return "".join(reason_normalised(reason).split()).startswith(EVENT_REASON_PREFIX)


def event_reason_read(reason: str | None) -> tuple[str, int | None] | None:
    """What an event's reason names (coupons/auto_issue/jobs.py event_reason): ("signup",
    None) or ("order", the order's id); None for any other reason (a staff member's)."""
    if reason is None or not reason.startswith(EVENT_REASON_PREFIX):
        return None
    kind, _space, number = reason.removeprefix(EVENT_REASON_PREFIX).partition(" ")
    if kind == "signup" and not number:
        return ("signup", None)
    if kind == "order" and number.isdigit():
        return ("order", int(number))
    return None


def reason_key(reason: str) -> str:
    """SHA-256 of the normalised reason, hex: fixed width for the index, and compared byte
    for byte by any collation."""
    return hashlib.sha256(reason_normalised(reason).encode("utf-8")).hexdigest()
