from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext_lazy as _


class CouponsConfig(AppConfig):
    name = "coupons"
    verbose_name = _("coupons")

    def ready(self) -> None:
        from coupons.models import CouponTemplate
        from coupons.shopper_list import template_saved_or_deleted

        # Every publish, edit and delete gives the shopper list's terms a new version, in
        # the same transaction (coupons/shopper_list.py).
        for signal in (post_save, post_delete):
            signal.connect(
                template_saved_or_deleted,
                sender=CouponTemplate,
                dispatch_uid=f"shopper-list-{signal is post_save and 'save' or 'delete'}",
            )
