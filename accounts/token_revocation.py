"""A password change or a deactivation revokes every token the user holds.

Access tokens and refresh tokens are already refused by accounts.authentication after either
(password digest, is_active). Blacklisting the outstanding refresh tokens as well means that
setting the old password back does not bring them back; a deactivation also starts a new
token generation (accounts.models.TokenGeneration), so that reactivating the account does not
bring back the access tokens either, which are listed nowhere (SPEC section 19).

Every write that changes what authentication keeps of a user in Redis (accounts/user_facts.py:
the active flag, password, token generation, username, staff flags), and every delete, forgets
those facts before it and after its commit. Writes that bypass save() and delete() (a
queryset's update()) must call user_facts_change themselves."""

from django.contrib.auth import get_user_model
from django.db.models import F
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save
from django.dispatch import receiver
from django.utils import timezone
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.models import TokenGeneration
from accounts.user_facts import (
    user_facts_change,
    user_facts_forget,
    user_facts_forget_after_commit,
)

User = get_user_model()
# The user's columns accounts.user_facts keeps in Redis.
FACT_FIELDS = frozenset({"password", "is_active", "username", "is_staff", "is_superuser"})


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
    with user_facts_change(user_id):
        advanced = TokenGeneration.objects.filter(user_id=user_id).update(
            generation=F("generation") + 1
        )
        if not advanced:
            TokenGeneration.objects.get_or_create(user_id=user_id, defaults={"generation": 1})


@receiver(pre_save, sender=User)
def note_credential_change(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    instance._revoke_tokens = instance._deactivated = instance._facts_change = False
    if instance.pk is None:
        return
    if update_fields is not None and not FACT_FIELDS & set(update_fields):
        return  # e.g. login's last_login update: nothing to compare, no query
    if raw:  # a fixture: nothing to compare with
        instance._facts_change = True
        user_facts_forget(instance.pk)
        return
    before = User.objects.filter(pk=instance.pk).values(*FACT_FIELDS).first()
    if before is None:
        return
    if any(before[field] != getattr(instance, field) for field in FACT_FIELDS):
        instance._facts_change = True
        user_facts_forget(instance.pk)
    instance._deactivated = before["is_active"] and not instance.is_active
    instance._revoke_tokens = before["password"] != instance.password or instance._deactivated


@receiver(post_save, sender=User)
def revoke_tokens_after_credential_change(sender, instance, created, raw=False, **kwargs):
    if created or getattr(instance, "_facts_change", False):
        # A new user too: its id may be one a restored database forgot, with facts left.
        instance._facts_change = False
        user_facts_forget_after_commit(instance.pk)
    if getattr(instance, "_revoke_tokens", False):
        instance._revoke_tokens = False
        user_tokens_revoke(user_id=instance.pk)
    if getattr(instance, "_deactivated", False):
        instance._deactivated = False
        token_generation_advance(user_id=instance.pk)


@receiver(pre_delete, sender=User)
def forget_facts_before_delete(sender, instance, **kwargs) -> None:
    user_facts_forget(instance.pk)


@receiver(post_delete, sender=User)
def forget_facts_after_delete(sender, instance, **kwargs) -> None:
    user_facts_forget_after_commit(instance.pk)
