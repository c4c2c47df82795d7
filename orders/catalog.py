"""The catalog as coupons sees it (coupons.catalog.ScopeCatalog), registered by the setting
COUPON_SCOPE_CATALOG: coupons asks which category and product ids exist without importing us."""

from collections.abc import Collection

from orders.models import Category, Product


class OrdersCatalog:
    def names(self, *, scope: str, ids: Collection[int]) -> dict[int, str]:
        model = Category if scope == "categories" else Product
        return dict(model.objects.filter(pk__in=list(ids)).values_list("pk", "name"))

    def categories(self) -> dict[int, str]:
        return dict(Category.objects.order_by("name").values_list("pk", "name"))

    def products(self) -> dict[int, str]:
        return dict(Product.objects.order_by("name", "pk").values_list("pk", "name"))
