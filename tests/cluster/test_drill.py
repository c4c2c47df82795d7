"""The failover drill (drill/, `make drill`; SPEC section 22) in short, with the cluster's
supervisor and the app's scheduler running: two SIGKILLs of the writer, a 10 s freeze of it
and a kill of a backup under load pass every check of the ledger (the supervisor brings each
node back; `make drill` adds two nodes and all three lost at once); and the negative
control, an asynchronous replica promoted, is caught losing acknowledged claims by the same
checks."""

import pytest

from drill.control import run_control
from drill.run import LOSS_CHECK, run_drill
from localservers.galera import free_base_port, start

pytestmark = [pytest.mark.servers, pytest.mark.cluster]


def test_two_writer_kills_lose_nothing_the_ledger_acknowledged(tmp_path):
    cluster = start(tmp_path / "cluster", free_base_port())
    try:
        result = run_drill(
            cluster,
            tmp_path,
            kills=2,
            freezes=1,
            backup_kills=1,
            losses_together=False,
            storms=3,
            shoppers=1,
        )
    finally:
        cluster.stop()

    failed = {check.name: check.detail for check in result.checks if not check.passed}
    assert failed == {}
    faults = [fault.fault for fault in result.ledger.kills]
    assert faults == ["kill", "freeze", "thaw", "backup kill", "kill"]
    assert result.ledger.reads  # the replica's reads were checked against the claims
    statuses = result.ledger.by_status()
    assert statuses[("claim", "201")] > 0 and statuses[("checkout", "201")] > 0
    assert statuses[("pay", "200")] > 0
    # The kills were felt: some answer said "not now" (503) or the key was still running.
    assert any(label.startswith(("503", "409 request_in")) for _, label in statuses)
    assert result.final_pass > 0


def test_the_checks_see_the_loss_of_a_promoted_async_replica(tmp_path):
    result = run_control(tmp_path)

    loss = result.check(LOSS_CHECK)
    assert not loss.passed, loss.detail
    assert result.ledger.by_status()[("claim", "201")] > 0
