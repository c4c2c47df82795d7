"""Shoppers sign themselves up (SPEC section 35): a username and a password under the same
rules as everywhere (Django's validators, AUTH_PASSWORD_VALIDATORS), the account created as
every door creates one, so it earns the sign-up coupons (coupons/apps.py's receiver writes
them with the account: SPEC section 28).

Nothing tells a taken name from a free one but the answer itself, which a registration must
give: the password is hashed before the name is looked at, so a taken name costs the same time
as a new account, and the throttles (accounts/throttles.py RegisterThrottle: per address and
per name, counted in this process while Redis is away) bound how many names anyone can try
(decision 1026)."""

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.domain_errors import DomainError

PASSWORD_MAX_LENGTH = 128  # hashing a longer one costs more than any person types


class RegistrationInvalid(DomainError):
    code = "invalid"
    default_detail = gettext_lazy("This account cannot be registered.")


def account_register(*, username: str, password: str):
    """A new active shopper (not staff) named `username`, or RegistrationInvalid naming
    `username` (the rules of the username field, or taken, which the database's collation
    decides: `Alice` is taken when `alice` is) or `password` (the validators)."""
    User = get_user_model()
    errors: dict[str, list[str]] = {}
    field = User._meta.get_field(User.USERNAME_FIELD)
    assert isinstance(field, models.Field)  # a column, not a relation
    username = User.normalize_username(username.strip())
    try:
        field.run_validators(username)
        if not username:
            raise ValidationError(_("A username is required."))
    except ValidationError as error:
        errors["username"] = list(error.messages)
    if len(password) > PASSWORD_MAX_LENGTH:
        errors["password"] = [_("At most %(count)d characters.") % {"count": PASSWORD_MAX_LENGTH}]
    else:
        try:
            password_validation.validate_password(password, User(username=username))
        except ValidationError as error:
            errors["password"] = list(error.messages)
    if errors:
        raise RegistrationInvalid(fields=errors)
    hashed = make_password(password)  # before the name is looked at: the same time either way
    try:
        with transaction.atomic():
            if User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).exists():
                raise IntegrityError("taken")
            user = User(**{User.USERNAME_FIELD: username}, password=hashed)
            user.save()  # the sign-up coupons' tasks are written in this transaction
    except IntegrityError as error:
        taken = _("This username is taken; choose another.")
        raise RegistrationInvalid(fields={"username": [taken]}) from error
    password_validation.password_changed(password, user)
    return user
