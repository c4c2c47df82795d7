"""The drill's "no writer moves without a fault" rule (drill/checks.py), on ledgers written by
hand: what explains a move and what does not."""

from drill.checks import writer_moves_follow_faults
from drill.ledger import Ledger, WriterMove

WRITER = 1


def verdict(faults: list[tuple[str, float, str]], moves: list[tuple[float, int, int]]) -> bool:
    ledger = Ledger()
    for node, at, fault in faults:
        ledger.kill(node, at, fault=fault)
    ledger.moves.extend(WriterMove(at, from_node, to_node) for at, from_node, to_node in moves)
    return writer_moves_follow_faults(ledger, writer_node=WRITER).passed


def test_a_move_with_no_fault_near_it_fails():
    assert not verdict([("node1", 0.0, "kill")], [(2.0, 1, 2), (40.0, 2, 3)])


def test_a_kill_or_freeze_explains_a_move_away_from_that_node():
    assert verdict([("node1", 0.0, "kill"), ("node2", 30.0, "freeze")], [(2.0, 1, 2), (32.0, 2, 3)])


def test_another_nodes_thaw_explains_a_move_away_from_a_healthy_node():
    """A thawed node's rejoin reconfigures the cluster: node 1 may leave the primary component
    for a moment (seen in CI: node1 -> node3, then node3 -> node2)."""
    faults = [("node2", 0.0, "freeze"), ("node2", 10.0, "thaw")]

    assert verdict(faults, [(12.0, 1, 3), (13.0, 3, 2), (18.0, 2, 1)])


def test_a_nodes_own_thaw_does_not_explain_losing_the_writes_it_took_back():
    faults = [("node2", 0.0, "freeze"), ("node2", 10.0, "thaw")]

    assert not verdict(faults, [(2.0, 2, 3), (10.2, 3, 2), (16.0, 2, 3)])
