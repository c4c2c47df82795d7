"""The admin of users, groups and staff access. Importing the modules that register ModelAdmins
here is what Django's admin autodiscovery needs; nothing is re-exported."""

from backoffice.account_admin import groups, users  # noqa: F401  (registration)
