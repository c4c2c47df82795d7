"""The token blacklist's models are plumbing of token rotation (accounts/views.py): nothing an
operator reads or edits, so they are not in the operator's admin (SPEC section 17)."""

from django.contrib import admin
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken

for model in (BlacklistedToken, OutstandingToken):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
