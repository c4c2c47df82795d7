"""simplejwt's messages that its own zh_Hans catalog leaves untranslated (marked fuzzy, or
empty), named here so that `makemessages` keeps them in ours (locale/, which wins over an
app's catalog). The rest of simplejwt's come from its catalog: the app is in INSTALLED_APPS
for that (decision 0642)."""

from django.utils.translation import gettext_noop

SIMPLEJWT_MESSAGES = (
    gettext_noop("Token is invalid"),
    gettext_noop("Token is expired"),
    gettext_noop("No active account found for the given token."),
    gettext_noop("The user's password has been changed."),
    gettext_noop("Outstanding Token"),
    gettext_noop("Outstanding Tokens"),
    gettext_noop("Token for %(user)s (%(jti)s)"),
    gettext_noop("Blacklisted Token"),
    gettext_noop("Blacklisted Tokens"),
    gettext_noop("Blacklisted token for %(user)s"),
)
