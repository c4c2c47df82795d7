"""coupons imports nothing from orders (the import contracts in pyproject.toml hold that): the
catalog reaches it only through the injected COUPON_SCOPE_CATALOG (coupons.catalog)."""


def test_the_catalog_is_injected_by_a_setting(settings):
    from coupons.catalog import scope_catalog

    assert settings.COUPON_SCOPE_CATALOG == "orders.catalog.OrdersCatalog"
    settings.COUPON_SCOPE_CATALOG = ""
    assert scope_catalog() is None
