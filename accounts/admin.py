"""The token blacklist's models are plumbing of token rotation (accounts/views.py): nothing an
operator reads or edits, so they are not in the operator's admin (SPEC section 17). The log
page of staff actions is registered by accounts/audit_admin.py, imported here."""

from django.contrib import admin
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

from accounts import audit_admin  # noqa: F401  (registers the log page)

for model in (BlacklistedToken, OutstandingToken):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
