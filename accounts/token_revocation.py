"""A password change or a deactivation revokes every token the user holds.

Access tokens and refresh tokens are already refused by accounts.authentication after either
(password digest, is_active). Blacklisting the outstanding refresh tokens as well means that
setting the old password back does not bring them back; a deactivation also starts a new
token generation (accounts.models.TokenGeneration), so that reactivating the account does not
bring back the access tokens either, which are listed nowhere (SPEC section 19)."""

from django.contrib.auth import get_user_model
from django.db.models import F
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.models import TokenGeneration

User = get_user_model()


def user_tokens_revoke(*, user_id: int) -> int:
    """Blacklist every unexpired refresh token of the user; returns how many were added.
    Runs in the caller's transaction, if any."""
    outstanding = OutstandingToken.objects.filter(
        user_id=user_id, expires_at__gt=timezone.now(), blacklistedtoken__isnull=True
    )
    added = BlacklistedToken.objects.bulk_create(
        [BlacklistedToken(token=token) for token in outstanding], ignore_conflicts=True
    )
    return len(added)


def token_generation_advance(*, user_id: int) -> None:
    """Start a new token generation for the user: every token issued before is refused from
    now on. Runs in the caller's transaction, if any."""
    advanced = TokenGeneration.objects.filter(user_id=user_id).update(
        generation=F("generation") + 1
    )
    if not advanced:
        TokenGeneration.objects.get_or_create(user_id=user_id, defaults={"generation": 1})


@receiver(pre_save, sender=User)
def note_credential_change(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    instance._revoke_tokens = instance._deactivated = False
    if raw or instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return  # e.g. login's last_login update: nothing to compare, no query
    before = User.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    instance._deactivated = before["is_active"] and not instance.is_active
    instance._revoke_tokens = before["password"] != instance.password or instance._deactivated


@receiver(post_save, sender=User)
def revoke_tokens_after_credential_change(sender, instance, created, raw=False, **kwargs):
    if getattr(instance, "_revoke_tokens", False):
        instance._revoke_tokens = False
        user_tokens_revoke(user_id=instance.pk)
    if getattr(instance, "_deactivated", False):
        instance._deactivated = False
        token_generation_advance(user_id=instance.pk)
