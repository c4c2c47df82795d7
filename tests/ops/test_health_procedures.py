"""A database restored without its stored procedures (a dump taken without --routines): /healthz
is `down` and tells staff which procedure is missing, a claim answers 503, never 500, and
`manage.py restore_procedures` puts it back (SPEC section 19; docs/operations.md, "Restores")."""

import pytest
from django.core.management import call_command
from django.db import connection

from ops.database_faults import breaker as database_breaker
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory


@pytest.mark.django_db(transaction=True)
def test_a_missing_procedure_fails_readiness_with_the_reason_and_claims_answer_503():
    staff = bearer_client(UserFactory(is_staff=True))
    shopper = bearer_client(UserFactory())
    template = CouponTemplateFactory(total=5)
    with connection.cursor() as cursor:
        cursor.execute("DROP PROCEDURE coupon_decide")
    try:
        health = staff.get("/healthz")
        claim = shopper.post(f"/api/coupons/{template.pk}/claim")
    finally:
        call_command("restore_procedures", stdout=open("/dev/null", "w"))
    database_breaker.reset()

    assert (health.status_code, health.json()["status"]) == (503, "down")
    assert health.json()["database"] == "missing procedure coupon_decide"
    assert (claim.status_code, claim.json()["code"]) == (503, "unavailable")
    # restored: ready again, and the claim goes through
    assert staff.get("/healthz").json() == {"status": "ok", "database": "ok", "redis": "ok"}
    assert shopper.post(f"/api/coupons/{template.pk}/claim").status_code == 201
