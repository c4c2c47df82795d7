"""What coupons may know of the shop's catalog, without importing it.

A template's scope holds plain category or product ids; `coupons` must not import `orders`
(the layers contract in pyproject.toml). The catalog is injected instead: the setting
COUPON_SCOPE_CATALOG names a callable (the orders app provides `orders.catalog.OrdersCatalog`)
that returns an object answering `names()`. With the setting empty, ids are not checked
against a catalog (only their form is)."""

from collections.abc import Collection
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string


class ScopeCatalog(Protocol):
    def names(self, *, scope: str, ids: Collection[int]) -> dict[int, str]:
        """The display names of those of `ids` that exist, for scope "categories" or
        "products"; an id missing from the answer does not exist."""
        ...

    def categories(self) -> dict[int, str]:
        """Every category, id -> name (few enough to list in the admin)."""
        ...

    def products(self) -> dict[int, str]:
        """Every product, id -> name, for the admin's scope picker (which filters them by name
        in the browser)."""
        ...


def scope_catalog() -> ScopeCatalog | None:
    path = getattr(settings, "COUPON_SCOPE_CATALOG", "")
    return import_string(path)() if path else None
