"""Changes of a user that revoke (or change) what its tokens may do, as staff or the user make
them: for the tests that hold authentication to them."""

from accounts.token_revocation import token_generation_advance


def deactivate(user) -> None:
    user.is_active = False
    user.save()


def change_password(user) -> None:
    user.set_password("another-pass-word-456")
    user.save()


def advance_generation(user) -> None:
    token_generation_advance(user_id=user.pk)


def demote(user) -> None:
    user.is_superuser = False
    user.save()
