from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_save
from django.utils.translation import gettext_lazy as _


class CouponsConfig(AppConfig):
    name = "coupons"
    verbose_name = _("Coupons")

    def ready(self) -> None:
        # Every door that creates an account (sign-up, the admin, createsuperuser, seeds that
        # save users one by one) earns the sign-up coupons (SPEC section 28).
        post_save.connect(
            _account_created, sender=settings.AUTH_USER_MODEL, dispatch_uid="signup-coupons"
        )


def _account_created(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
    if created and not raw:  # not a fixture being loaded
        from coupons.auto_issue.events import signup_tasks

        signup_tasks(user_id=instance.pk)
