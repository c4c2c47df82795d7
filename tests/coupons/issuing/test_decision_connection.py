"""The decision's own connection (alias "decision"; docs/decisions/0240-decision-connection.md):
the default's guarantees, never an open transaction left behind whatever way the decision
ends, and the default connection where an outer transaction must see the decision or where
the alias is not configured."""

import pytest
from django.db import OperationalError, connection, connections, transaction

from coupons.issuing import transaction as decisions
from coupons.issuing.service import coupon_issue
from coupons.issuing.transaction import DECISION_ALIAS, decision_transaction
from coupons.models import CouponTemplate, UserCoupon
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.helpers import claim_url, statements_made_by

pytestmark = pytest.mark.django_db(transaction=True)

COUNT_ONE = "UPDATE coupon_templates SET claimed_count = claimed_count + 1 WHERE id = %s"


def open_transactions(session) -> int:
    """Transactions InnoDB holds open for that connection's server session (read elsewhere)."""
    thread_id = session.connection.thread_id()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = %s",
            [thread_id],
        )
        return cursor.fetchone()[0]


def claimed_count(template) -> int:
    return CouponTemplate.objects.values_list("claimed_count", flat=True).get(pk=template.pk)


def test_the_decision_connection_has_the_default_connections_guarantees():
    decision = connections[DECISION_ALIAS]
    with decision.cursor() as cursor:
        cursor.execute(
            "SELECT DATABASE(), @@SESSION.tx_isolation, @@SESSION.innodb_lock_wait_timeout,"
            " @@SESSION.sql_mode, @@SESSION.autocommit"
        )
        database, isolation, lock_wait, sql_mode, autocommit = cursor.fetchone()
    decision.rollback()

    assert database == connection.settings_dict["NAME"]  # the same (test) database
    assert (isolation, lock_wait, autocommit) == ("READ-COMMITTED", 5, 0)
    assert "STRICT_TRANS_TABLES" in sql_mode
    default, kept = connection.settings_dict, decision.settings_dict
    for setting in ("OPTIONS", "CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "HOST", "PORT", "USER"):
        assert kept[setting] == default[setting], setting
    assert decision.get_autocommit() is False


def test_a_claim_decides_on_the_decision_connection_and_leaves_no_transaction_open():
    template = CouponTemplateFactory(total=5)
    client = bearer_client(UserFactory())

    assert client.post(claim_url(template)).status_code == 201

    decision = connections[DECISION_ALIAS]
    assert decision.connection is not None  # the claim decided there
    assert open_transactions(decision) == 0
    assert claimed_count(template) == 1
    assert UserCoupon.objects.filter(template=template).count() == 1


def test_an_error_inside_the_decision_rolls_it_back_and_leaves_no_transaction_open():
    template = CouponTemplateFactory(total=5)

    with pytest.raises(RuntimeError), decision_transaction() as decision:
        with decision.connection.cursor() as cursor:
            cursor.execute(COUNT_ONE, [template.pk])
        raise RuntimeError("after the UPDATE")

    assert open_transactions(connections[DECISION_ALIAS]) == 0
    assert claimed_count(template) == 0


def test_a_rolled_back_decision_writes_nothing_and_leaves_no_transaction_open():
    template = CouponTemplateFactory(total=5)

    with decision_transaction() as decision, decision.connection.cursor() as cursor:
        cursor.execute(COUNT_ONE, [template.pk])
        decision.roll_back()

    assert open_transactions(connections[DECISION_ALIAS]) == 0
    assert claimed_count(template) == 0


def test_a_failed_commit_closes_the_decision_connection_and_the_server_rolls_back(monkeypatch):
    template = CouponTemplateFactory(total=5)
    decision = connections[DECISION_ALIAS]

    def lost(*args, **kwargs):
        raise OperationalError(2013, "Lost connection to server during query")

    monkeypatch.setattr(decision, "_commit", lost)
    with pytest.raises(OperationalError), decision_transaction() as opened:
        with opened.connection.cursor() as cursor:
            cursor.execute(COUNT_ONE, [template.pk])

    assert decision.connection is None  # closed: the next decision starts on a fresh one
    assert claimed_count(template) == 0
    monkeypatch.undo()
    assert bearer_client(UserFactory()).post(claim_url(template)).status_code == 201
    assert claimed_count(template) == 1


def test_inside_an_outer_transaction_the_decision_is_a_savepoint_of_the_default_connection():
    """A caller's transaction sees what it issued, and takes it back when it rolls back; the
    decision connection is not used (it would wait for the caller's locks)."""
    template = CouponTemplateFactory(total=5)
    user = UserFactory()

    def issue_then_roll_back() -> None:
        with transaction.atomic():
            coupon = coupon_issue(template_id=template.pk, user_id=user.pk, source="claim")
            assert UserCoupon.objects.filter(pk=coupon.pk).exists()
            assert claimed_count(template) == 1
            transaction.set_rollback(True)

    made_there = statements_made_by(issue_then_roll_back)

    assert made_there["Com_savepoint"] == 1
    assert "Com_commit" not in made_there  # the decision connection would have committed
    assert claimed_count(template) == 0
    assert not UserCoupon.objects.filter(template=template).exists()


def test_without_the_decision_alias_the_decision_switches_autocommit_on_the_default_connection(
    monkeypatch,
):
    """SQLite under `make run` configures no decision alias: today's four statements there."""
    monkeypatch.setattr(decisions, "DECISION_ALIAS", "not-configured")
    template = CouponTemplateFactory(total=5)
    user = UserFactory()

    made = statements_made_by(
        lambda: coupon_issue(template_id=template.pk, user_id=user.pk, source="claim")
    )

    assert made["Com_set_option"] == 2  # SET autocommit=0, then =1 (which commits)
    assert "Com_commit" not in made
    assert claimed_count(template) == 1
    assert UserCoupon.objects.filter(template=template, user=user).count() == 1
