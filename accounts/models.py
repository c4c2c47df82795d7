"""What the token checks need beyond Django's user."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class TokenGeneration(models.Model):
    """How many times a user's tokens were revoked wholesale by a deactivation. Every token
    the login issues carries the generation it was issued in (claim TOKEN_GENERATION_CLAIM;
    none counts as 0), and authentication refuses a token of another generation, so
    reactivating a user revives none of the tokens they held before (SPEC section 19). A row
    exists only for users who were ever deactivated."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="token_generation",
    )
    generation = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.user_id}: generation {self.generation}"


class StaffManagement(models.Model):
    """No rows: the holder of the one permission to manage staff accounts, groups and
    permissions (accounts.manage_staff). Superusers hold it; anyone else only when granted
    explicitly: "Can change user" or "Can change group" alone no longer let a staff member
    make itself superuser or give its group more
    (docs/decisions/1002-staff-access-is-its-own-permission.md)."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("manage_staff", "Can manage staff accounts, groups and permissions")]
        verbose_name = _("staff management")

    def __str__(self) -> str:
        return str(self._meta.verbose_name)


class UserFactsToForget(models.Model):
    """A change of a user whose facts in Redis must go (accounts/user_facts.py): written in the
    change's own transaction, deleted once Redis has confirmed it forgot them; what is left
    (Redis did not answer) the scheduler forgets as soon as Redis does (accounts.jobs). Not a
    foreign key: a deleted user's facts must go too."""

    user_id = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"user {self.user_id}"
