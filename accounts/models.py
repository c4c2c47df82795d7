"""What the token checks need beyond Django's user."""

from django.conf import settings
from django.db import models


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
