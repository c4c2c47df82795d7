"""The local Galera cluster behind HAProxy (localservers/galera): writes go to node 1,
survive its SIGKILL on a backup, and the killed node rejoins with every row; a crash of every
node is recovered from the most advanced one. The tests share one cluster and run in order."""

import signal
import socket
import time

import MySQLdb
import pytest

from core.database_errors import CONNECTION_ERROR_CODES, UNAVAILABLE_ERROR_CODES
from drill.restore import backup_node
from localservers.galera import NODES, Cluster, free_base_port, ist_ports, start
from localservers.mariadb_server import MariaDBServer
from localservers.waiting import wait_until
from ops.vitals import DatabaseClusterCollector

pytestmark = [pytest.mark.servers, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start(tmp_path_factory.mktemp("galera"), free_base_port())
    connection = running.connect()
    try:
        cursor = connection.cursor()
        cursor.execute("CREATE DATABASE drill")
        cursor.execute(
            "CREATE TABLE drill.acks (id INT AUTO_INCREMENT PRIMARY KEY, node VARCHAR(8))"
        )
    finally:
        connection.close()
    yield running
    running.stop()


def write_through_haproxy(cluster: Cluster) -> tuple[int, str]:
    """One acknowledged insert through HAProxy: its id and the node that took it."""
    connection = cluster.connect()
    try:
        connection.autocommit(True)
        cursor = connection.cursor()
        cursor.execute("INSERT INTO drill.acks (node) VALUES (@@wsrep_node_name)")
        cursor.execute("SELECT LAST_INSERT_ID(), @@wsrep_node_name")
        row_id, node = cursor.fetchone()
        return int(row_id), str(node)
    finally:
        connection.close()


def rows_on(cluster: Cluster, node: int) -> dict[int, str]:
    connection = cluster.connect(node)
    try:
        cursor = connection.cursor()
        cursor.execute("SET SESSION wsrep_sync_wait = 1")  # whatever node 1 applied, too
        cursor.execute("SELECT id, node FROM drill.acks")
        return {int(row_id): str(name) for row_id, name in cursor.fetchall()}
    finally:
        connection.close()


def test_every_write_goes_to_node_1_and_reaches_every_node(cluster):
    acknowledged = dict(write_through_haproxy(cluster) for _ in range(5))

    assert cluster.writer() == 1
    assert set(acknowledged.values()) == {"node1"}
    for node in NODES:
        assert rows_on(cluster, node) == acknowledged
    # What /metrics reports as the writer and the cluster's size (ops/vitals.py).
    connection = cluster.connect()
    try:
        cursor = connection.cursor()
        cursor.execute(DatabaseClusterCollector.SQL)
        _hostname, wsrep_on, node_name, cluster_size = cursor.fetchone()
    finally:
        connection.close()
    assert (wsrep_on, node_name, int(cluster_size)) == (1, "node1", 3)


def test_writes_resume_on_a_backup_when_the_writer_is_killed_and_it_rejoins(cluster):
    before = rows_on(cluster, 1)
    cluster.kill(1)

    def a_write_lands() -> tuple[int, str]:
        return write_through_haproxy(cluster)

    row_id, node = wait_until(
        a_write_lands, timeout=30, what="a write after the kill", ignoring=(MySQLdb.Error,)
    )
    assert node == "node2"  # the first backup, never node 3 while node 2 is synced
    assert cluster.writer() == 2
    during = dict(write_through_haproxy(cluster) for _ in range(5))
    assert set(during.values()) == {"node2"}

    cluster.restart(1)  # a joiner, not a second bootstrap: it catches up by IST
    cluster.wait_writer(1)
    after = dict(write_through_haproxy(cluster) for _ in range(3))

    assert set(after.values()) == {"node1"}
    expected = {**before, row_id: node, **during, **after}
    for node_number in NODES:
        assert rows_on(cluster, node_number) == expected
    assert cluster.wsrep_status(1)["wsrep_cluster_size"] == "3"


def test_a_node_whose_ist_port_is_held_rejoins_by_ist_on_a_spare(cluster):
    """After a transfer Galera's IST port can stay unbindable for a minute (TIME_WAIT, no
    SO_REUSEADDR): here a socket holds it, and the restart takes the next spare port and
    still catches up incrementally rather than by a full copy."""
    cluster.kill(3)
    missed = dict(write_through_haproxy(cluster) for _ in range(3))
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past a TIME_WAIT there
    holder.bind(("127.0.0.1", cluster.ports(3).ist))
    holder.listen()
    log_before = cluster.error_log(3).stat().st_size
    try:
        cluster.restart(3)
    finally:
        holder.close()

    spare = ist_ports(cluster.base_port, 3)[1]
    assert f"ist.recv_addr=127.0.0.1:{spare};" in (cluster.node_dir(3) / "my.cnf").read_text()
    with open(cluster.error_log(3), errors="replace") as log:
        log.seek(log_before)
        this_start = log.read()
    assert f"IST receiver addr using tcp://127.0.0.1:{spare}" in this_start
    assert "IST received" in this_start
    assert "received from donor: Running IST" in this_start  # the SST script copied nothing
    assert missed.items() <= rows_on(cluster, 3).items()


def test_a_backup_of_a_desynced_backup_node_opens_with_every_row(cluster, tmp_path):
    """docs/operations.md's backup (drill/restore.py's): node 3 desynced, mariadb-backup
    --galera-info, prepared, then opened by a plain mariadbd of its own."""
    expected = rows_on(cluster, 1)
    target = tmp_path / "backup"

    uuid, seqno = backup_node(cluster, 3, target)

    assert uuid == cluster.wsrep_status(1)["wsrep_cluster_state_uuid"] and seqno > 0
    restored = MariaDBServer(tmp_path / "restored", datadir=target)
    restored.start()
    try:
        connection = restored.connect()
        cursor = connection.cursor()
        cursor.execute("SELECT id, node FROM drill.acks")
        assert {int(row_id): str(node) for row_id, node in cursor.fetchall()} == expected
        connection.close()
    finally:
        restored.stop()
    wait_until(lambda: cluster.is_synced(3), timeout=30, what="node 3 to be Synced again")


def test_a_node_cut_off_from_the_majority_refuses_with_an_unavailable_error(cluster):
    """Two nodes killed at once: node 1 alone is no primary component and answers 1047
    (WSREP has not yet prepared node), which the app counts as the database away (503)."""
    cluster.kill(2)
    cluster.kill(3)
    connection = wait_until(
        lambda: cluster.connect(1), timeout=10, what="node 1", ignoring=(MySQLdb.Error,)
    )
    try:

        def refused() -> int:
            try:
                connection.cursor().execute("SELECT COUNT(*) FROM drill.acks")
            except MySQLdb.OperationalError as error:
                return int(error.args[0])
            return 0

        code = wait_until(refused, timeout=30, what="node 1 to leave the primary component")
    finally:
        connection.close()

    assert code == 1047
    assert code in UNAVAILABLE_ERROR_CODES and code in CONNECTION_ERROR_CODES
    # HAProxy's check sees it too, and it has no synced node to send anyone to.
    wait_until(lambda: cluster.writer() is None, timeout=10, what="HAProxy to mark node 1 down")


def test_after_every_node_crashed_the_cluster_starts_from_the_most_advanced_node(cluster):
    """Node 1 dies first and misses writes that nodes 2 and 3 took; then those two die at
    once. No grastate.dat says safe_to_bootstrap: 1, so start() recovers each node's
    position (--wsrep-recover) and bootstraps from node 2 or 3: from node 1, the writes it
    missed would be lost."""
    cluster.kill(1)
    cluster.start()  # every node crashed: equal positions, bootstrapped from node 1 again
    assert cluster.writer() == 1 and cluster.wsrep_status(3)["wsrep_cluster_size"] == "3"
    cluster.kill(1)
    missed_by_node_1 = dict(
        wait_until(
            lambda: write_through_haproxy(cluster),
            timeout=30,
            what="a write on a backup",
            ignoring=(MySQLdb.Error,),
        )
        for _ in range(3)
    )
    # One backup took them all: no writer moved without a fault (node 2 unless it was still
    # proving itself healthy after an earlier test's restart: then node 3).
    (backup,) = set(missed_by_node_1.values())
    assert backup in ("node2", "node3")
    expected = rows_on(cluster, int(backup.removeprefix("node")))
    cluster.kill(3)
    cluster.kill(2)
    for node in NODES:
        assert cluster._grastate(node)["safe_to_bootstrap"] == "0"

    cluster.start()

    for node in NODES:
        assert rows_on(cluster, node) == expected
    assert cluster.writer() == 1
    row_id, node = write_through_haproxy(cluster)
    assert node == "node1" and row_id > max(expected)


def test_with_its_supervisor_the_cluster_heals_a_crash_of_every_node_without_a_human(cluster):
    """Every node SIGKILLed at once: the supervisor (`scripts/cluster start` runs it) finds
    them all down, bootstraps from the most advanced one and joins the others; writes are
    taken again within 60 s, and nothing acknowledged before the crash is lost."""
    acknowledged = dict(write_through_haproxy(cluster) for _ in range(5))
    before = rows_on(cluster, 1)
    cluster.start_supervisor()
    try:
        records = [cluster.process(node) for node in NODES]
        crashed_at = time.monotonic()
        for record in records:
            assert record is not None and record.send(signal.SIGKILL, group=True)

        row_id, _node = wait_until(
            lambda: write_through_haproxy(cluster),
            timeout=60,
            what="a write after the crash of every node",
            ignoring=(MySQLdb.Error,),
        )
        took = time.monotonic() - crashed_at
        wait_until(cluster.fully_joined, timeout=120, what="every node to rejoin")
    finally:
        cluster.stop_supervisor()

    assert took < 60
    assert before.items() >= acknowledged.items()
    for node in NODES:
        assert rows_on(cluster, node).items() >= before.items()
    assert row_id > max(before)
    print(f"writes again {took:.1f} s after every node crashed")  # for docs/measurements


def supervised_writes_after(cluster: Cluster, lose, *, timeout: float, heals_by: str) -> float:
    """With the supervisor running: `lose()` some of the cluster's nodes, then a write through
    HAProxy as soon as one lands; how long that took. Returns once the supervisor has said
    `heals_by` and every node is back."""
    log = cluster.base_dir / "supervisor.log"
    log_size = log.stat().st_size if log.exists() else 0
    cluster.start_supervisor()
    try:
        lost_at = time.monotonic()
        lose()
        wait_until(
            lambda: write_through_haproxy(cluster),
            timeout=timeout,
            what="a write after the loss",
            interval=0.05,
            ignoring=(MySQLdb.Error,),
        )
        took = time.monotonic() - lost_at
        wait_until(
            lambda: heals_by in supervisor_said(cluster, log_size),
            timeout=180,
            what=f"the supervisor to say {heals_by!r}",
        )
        wait_until(cluster.fully_joined, timeout=180, what="every node to rejoin")
    finally:
        cluster.stop_supervisor()
    return took


def supervisor_said(cluster: Cluster, since: int) -> str:
    with open(cluster.base_dir / "supervisor.log", errors="replace") as log:
        log.seek(since)
        return log.read()


def test_with_its_supervisor_a_killed_writer_costs_writes_under_5_seconds(cluster):
    """SPEC 22's promise with the cluster as shipped: the supervisor restarts the killed node
    only once the survivors have evicted it, so its return never breaks their view change
    (restarted at once, under its old identity, it stopped every write for up to 11 s)."""
    cluster.wait_writer(1)
    acknowledged = dict(write_through_haproxy(cluster) for _ in range(3))

    took = supervised_writes_after(
        cluster, lambda: cluster.kill(1), timeout=30, heals_by="restarted node1"
    )

    assert took < 5, f"writes came back {took:.1f} s after the kill"
    for node in NODES:
        assert rows_on(cluster, node).items() >= acknowledged.items()
    print(f"writes again {took:.1f} s after the writer was killed")  # for docs/measurements


def test_with_its_supervisor_two_nodes_lost_at_once_heal_without_a_human(cluster):
    """The writer and a backup SIGKILLed together: the last node is out of quorum; the
    supervisor makes it the primary component once the others are gone from its view, then
    rejoins them. Writes within 60 s, nothing acknowledged lost."""
    acknowledged = dict(write_through_haproxy(cluster) for _ in range(3))
    records = [cluster.process(node) for node in (1, 2)]

    def lose_two() -> None:
        for record in records:
            assert record is not None and record.send(signal.SIGKILL, group=True)

    took = supervised_writes_after(
        cluster, lose_two, timeout=60, heals_by="node3 was the last one up"
    )

    assert took < 60
    for node in NODES:
        assert rows_on(cluster, node).items() >= acknowledged.items()
    print(f"writes again {took:.1f} s after two nodes were killed")  # for docs/measurements
