"""The CACHES setting with its default cache moved (to another Redis or key prefix)."""


def cache_settings(caches: dict, **changes) -> dict:
    """CACHES with the default cache's LOCATION or KEY_PREFIX changed."""
    default = dict(caches["default"])
    if "location" in changes:
        default["LOCATION"] = changes["location"]
    if "key_prefix" in changes:
        default["KEY_PREFIX"] = changes["key_prefix"]
    return {**caches, "default": default}
