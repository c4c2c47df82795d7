"""The token cleanup (accounts.tasks.flush_expired_tokens, CELERY_BEAT_SCHEDULE):
refresh tokens past their expiry leave simplejwt's outstanding list with their blacklist
entries; live ones stay, and a live blacklisted token stays refused."""

from datetime import timedelta

import pytest
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts.tasks import flush_expired_tokens
from core import clock
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db


def outstanding(user, jti: str, *, expires_in: timedelta) -> OutstandingToken:
    return OutstandingToken.objects.create(
        user=user, jti=jti, token=f"token-{jti}", expires_at=clock.now() + expires_in
    )


def test_expired_refresh_tokens_and_their_blacklist_entries_are_flushed():
    # given
    user = UserFactory()
    expired = outstanding(user, "expired", expires_in=-timedelta(seconds=1))
    BlacklistedToken.objects.create(token=expired)
    live = outstanding(user, "live", expires_in=timedelta(days=1))
    live_revoked = outstanding(user, "live-revoked", expires_in=timedelta(days=1))
    BlacklistedToken.objects.create(token=live_revoked)

    # when
    line = flush_expired_tokens()

    # then
    assert line == "Flushed expired refresh tokens."
    assert sorted(OutstandingToken.objects.values_list("jti", flat=True)) == [
        live.jti,
        live_revoked.jti,
    ]
    assert list(BlacklistedToken.objects.values_list("token__jti", flat=True)) == [live_revoked.jti]
