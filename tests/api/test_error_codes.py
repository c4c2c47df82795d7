"""Every domain error code has an HTTP status in the one table that maps them."""

import api.errors
import backoffice.errors
import coupons.errors
import orders.errors
from api.exceptions import STATUS_BY_CODE
from core.domain_errors import DomainError


def all_subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in {direct, *all_subclasses(direct)}}


def test_every_domain_error_code_is_mapped():
    assert (
        backoffice.errors and api.errors and coupons.errors and orders.errors
    )  # imported so that their classes are registered
    codes = {error.code for error in all_subclasses(DomainError) if "code" in vars(error)}
    assert codes  # the apps' errors were found
    assert codes - set(STATUS_BY_CODE) == set()
