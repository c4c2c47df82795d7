"""A template's terms by name: what staff publish and edit, and what a shopper is shown."""

TEMPLATE_TERMS = (
    "name",
    "type",
    "value",
    "min_amount",
    "total",
    "per_user_limit",
    "valid_from",
    "valid_until",
    "max_discount",
    "valid_days",
    "scope",
    "scope_ids",
    "code",
    "visibility",
    "audience",
)
# A shopper sees only public templates, and codes are handed out, not listed.
SHOPPER_TERMS = tuple(term for term in TEMPLATE_TERMS if term not in ("code", "visibility"))
