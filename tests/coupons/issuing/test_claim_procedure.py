"""The claim's procedure is written from the same guard and coupon row as the Python path
(coupons/issuing/claim_sql.py, decision 1011): the latest migration that defines it holds the
generator's text, the database runs that text, and its parameters are the ones the call
binds, in that order. A change of the guard, the row or the procedure without a migration
fails here."""

import importlib
import re
from pathlib import Path

import pytest
from django.db import connection

from coupons.issuing.claim_sql import COUNT_THE_CLAIM_PARAMETERS, INSERT_COUPON_PARAMETERS
from coupons.issuing.procedure import (
    PROCEDURE_PARAMETERS,
    TOKEN_CHECK_PARAMETERS,
    coupon_decide_procedure,
)
from coupons.management.commands.restore_procedures import PROCEDURE_MIGRATIONS

pytestmark = pytest.mark.django_db


def words(sql: str) -> list[str]:
    return re.sub(r"\s+", " ", sql).strip().split(" ")


def test_the_latest_migration_holds_the_generated_procedure():
    latest = importlib.import_module(PROCEDURE_MIGRATIONS["coupon_decide"])
    defining = sorted(
        path.stem
        for path in Path(latest.__file__).parent.glob("0*.py")
        if "CREATE PROCEDURE coupon_decide" in path.read_text()
    )

    assert latest.__name__.rsplit(".", 1)[1] == defining[-1]  # restore_procedures names it
    assert words(latest.CREATE) == words(coupon_decide_procedure())


def test_the_database_runs_the_generated_procedure_with_the_parameters_the_call_binds():
    if connection.vendor != "mysql":
        pytest.skip("only MySQL/MariaDB has the procedure")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES"
            " WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'coupon_decide'"
        )
        (definition,) = cursor.fetchone()
        cursor.execute(
            "SELECT PARAMETER_NAME FROM information_schema.PARAMETERS WHERE SPECIFIC_SCHEMA ="
            " DATABASE() AND SPECIFIC_NAME = 'coupon_decide' ORDER BY ORDINAL_POSITION"
        )
        parameters = [name for (name,) in cursor.fetchall()]

    generated = coupon_decide_procedure()
    assert words(definition) == words(generated[generated.index("BEGIN") :])
    assert parameters == [f"p_{name}" for name in PROCEDURE_PARAMETERS]


def test_the_call_binds_the_guards_parameters_then_the_rows_then_the_record_and_the_token():
    assert PROCEDURE_PARAMETERS[: len(COUNT_THE_CLAIM_PARAMETERS)] == COUNT_THE_CLAIM_PARAMETERS
    assert PROCEDURE_PARAMETERS[-3:] == ("idempotency_record_id", *TOKEN_CHECK_PARAMETERS)
    assert set(PROCEDURE_PARAMETERS) == {
        *COUNT_THE_CLAIM_PARAMETERS,
        *INSERT_COUPON_PARAMETERS,
        "idempotency_record_id",
        *TOKEN_CHECK_PARAMETERS,
    }
