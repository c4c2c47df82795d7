"""The claim's decision in one call on MySQL (issue 22 item 1, migration 0011,
docs/decisions/0700-claim-decision-in-one-call.md): the guarded UPDATE, the INSERT and the
COMMIT run in the server, so no client Python runs while the template's row is locked; every
way the procedure ends leaves no transaction open, and what it refuses it writes nothing of.
The rule's grid through the procedure is tests/coupons/issuing/test_claim_sql_grid.py."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from coupons.issuing.decision import AlreadyGranted, GrantNote, decide
from coupons.issuing.service import coupon_issue
from coupons.issuing.transaction import DECISION_ALIAS
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from localservers.waiting import wait_until
from tests.support.concurrency import run_together
from tests.support.factories import CouponTemplateFactory, UserCouponFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def open_transactions() -> int:
    """Transactions InnoDB holds open for the decision connection's session (read elsewhere)."""
    decision = connections[DECISION_ALIAS]
    if decision.connection is None:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = %s",
            [decision.connection.thread_id()],
        )
        return cursor.fetchone()[0]


def claimed_count(template) -> int:
    return CouponTemplate.objects.values_list("claimed_count", flat=True).get(pk=template.pk)


def decide_for(template, user, *, slot=1, source="claim", grant=None, code_id=None):
    return decide(
        template=CouponTemplate.objects.get(pk=template.pk),
        user_id=user.pk,
        slot=slot,
        before_window_opens=False,
        source=source,
        grant=grant,
        single_use_code_id=code_id,
    )


def test_a_win_is_one_call_on_the_decision_connection_and_commits_in_the_server():
    template = CouponTemplateFactory(total=5)

    with CaptureQueriesContext(connections[DECISION_ALIAS]) as sent:
        outcome = decide_for(template, UserFactory())

    assert outcome.coupon is not None and outcome.claimed_count == 1
    assert [query["sql"].split("(")[0] for query in sent.captured_queries] == ["CALL coupon_decide"]
    assert open_transactions() == 0  # committed by the procedure: no COMMIT was sent after it
    stored = UserCoupon.objects.get(pk=outcome.coupon.pk)
    assert (stored.template_id, stored.slot, stored.source) == (template.pk, 1, "claim")
    assert claimed_count(template) == 1


def test_a_claim_by_id_of_a_hidden_template_is_refused_by_the_guarded_update():
    """Even when the screen's or the facts' check is passed (terms read before the template
    was hidden), the UPDATE counts no claim by id of a hidden template; a code still does."""
    template = CouponTemplateFactory(total=5, visibility="hidden", code="BY-CODE-ONLY")

    by_id = decide_for(template, UserFactory(), source="claim")
    by_code = decide_for(template, UserFactory(), source="code")

    assert by_id.coupon is None and not by_id.slot_taken
    assert by_code.coupon is not None
    assert claimed_count(template) == 1
    assert UserCoupon.objects.filter(template=template).count() == 1
    assert open_transactions() == 0


def test_a_taken_slot_is_rolled_back_in_the_server_and_tried_again():
    template = CouponTemplateFactory(total=5, per_user_limit=3)
    user = UserFactory()
    UserCouponFactory(template=template, user=user)  # slot 1
    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=1)

    taken = decide_for(template, user, slot=1)

    assert taken.slot_taken and taken.coupon is None
    assert claimed_count(template) == 1  # the procedure's UPDATE was rolled back with it
    assert open_transactions() == 0
    assert coupon_issue(template_id=template.pk, user_id=user.pk, source="claim").slot == 2


def test_a_grant_for_the_same_reason_again_is_refused_and_counts_nothing():
    template = CouponTemplateFactory(total=5, per_user_limit=3)
    user, staff = UserFactory(), UserFactory()
    note = GrantNote(granted_by_id=staff.pk, reason="Apology for order 42")
    assert decide_for(template, user, source="grant", grant=note).coupon is not None

    with pytest.raises(AlreadyGranted):
        decide_for(template, user, slot=2, source="grant", grant=note)

    assert claimed_count(template) == 1
    assert open_transactions() == 0


def test_a_refusal_frees_the_single_use_code_it_took():
    template = CouponTemplateFactory(total=1, has_single_use_codes=True)
    CouponTemplate.objects.filter(pk=template.pk).update(claimed_count=1)  # sold out
    code = SingleUseCode.objects.create(template=template, code="ABCDEFGH2345")

    outcome = decide_for(template, UserFactory(), source="code", code_id=code.pk)

    assert outcome.coupon is None and not outcome.code_used
    code.refresh_from_db()
    assert (code.used_at, code.used_by_id) == (None, None)
    assert open_transactions() == 0


def test_a_window_that_closes_while_the_update_waits_for_the_lock_issues_nothing(frozen_now):
    """The app's clock says the window's last instant; the server measures the wait for the
    row lock (held here by another session until the claim is seen waiting) and counts it."""
    template = CouponTemplateFactory(total=5)
    template.refresh_from_db()  # the window as stored (milliseconds)
    frozen_now(template.valid_until)
    user = UserFactory()
    holder = connections.create_connection("default")
    holder.connect()
    holder.set_autocommit(False)
    with holder.cursor() as cursor:
        cursor.execute("SELECT id FROM coupon_templates WHERE id = %s FOR UPDATE", [template.pk])
    outcomes = []
    claim = threading.Thread(target=lambda: outcomes.append(decide_for(template, user)))
    claim.start()
    try:
        wait_until(lock_waited_for, timeout=4, what="the claim waiting for the row lock")
    finally:
        holder.rollback()
        holder.close()
        claim.join()

    assert outcomes[0].coupon is None
    assert claimed_count(template) == 0
    assert not UserCoupon.objects.filter(template=template).exists()


def lock_waited_for() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM information_schema.innodb_lock_waits")
        return cursor.fetchone()[0] > 0


def test_racing_claims_never_issue_more_than_the_total():
    template = CouponTemplateFactory(total=7, per_user_limit=1)
    users = [UserFactory() for _ in range(24)]

    def claim(user):
        def attempt():
            try:
                return coupon_issue(template_id=template.pk, user_id=user.pk, source="claim")
            except Exception as error:  # the refusals: sold out
                return error

        return attempt

    results = run_together([claim(user) for user in users])

    issued = [result for result in results if isinstance(result, UserCoupon)]
    assert len(issued) == 7
    assert {type(result).__name__ for result in results if result not in issued} == {"ClaimSoldOut"}
    assert claimed_count(template) == 7
    assert UserCoupon.objects.filter(template=template).count() == 7
    assert len({coupon.user_id for coupon in issued}) == 7


def test_the_procedure_answers_the_wait_and_a_relative_window_starts_after_it(frozen_now):
    """A template whose coupons last valid_days from issue: the coupon's window starts at
    the app's `now` plus the wait the server measured, in the row and in the answer alike."""
    template = CouponTemplateFactory(total=5, valid_days=3)
    frozen_now(template.valid_from + timedelta(hours=1))

    outcome = decide_for(template, UserFactory())

    stored = UserCoupon.objects.get(pk=outcome.coupon.pk)
    assert stored.valid_until - stored.valid_from == timedelta(days=3)
    assert abs(stored.valid_from - outcome.coupon.valid_from) < timedelta(milliseconds=1)
    assert stored.created_at >= template.valid_from + timedelta(hours=1)


@pytest.mark.django_db
def test_inside_a_callers_transaction_the_statements_refuse_a_hidden_template_by_id_too():
    template = CouponTemplateFactory(total=5, visibility="hidden", code="BY-CODE-TOO")

    with CaptureQueriesContext(connection) as sent:
        by_id = decide_for(template, UserFactory(), source="claim")
    by_code = decide_for(template, UserFactory(), source="code")

    assert any("visibility = 'public'" in query["sql"] for query in sent.captured_queries)
    assert (by_id.coupon, by_code.coupon is not None) == (None, True)
    assert claimed_count(template) == 1
