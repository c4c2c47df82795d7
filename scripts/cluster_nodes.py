"""A local 3-node MariaDB Galera cluster behind HAProxy, for `make cluster`, the tests marked
`cluster`, the drill and the bench (SPEC section 22; docs/operations.md has the production
layout; docs/decisions/0800-galera-single-writer-behind-haproxy.md says why).

    from scripts.cluster_nodes import start
    cluster = start(base_dir, base_port)   # bootstraps, or rejoins what is there
    cluster.haproxy_url("coupons")         # DATABASE_URL: every connection to the writer
    cluster.writer()                       # 1, 2 or 3: the node HAProxy sends writes to
    cluster.kill(1); cluster.restart(1)    # SIGKILL; rejoin (IST or SST) until Synced
    cluster.stop()

Ports, all on 127.0.0.1 and all derived from `base_port`: HAProxy's writer port is base,
its reader port base + 1 (DATABASE_REPLICA_URL: nodes 2 and 3, node 1 as the fallback);
node n (1-3) listens for SQL on base + 10n, for Galera replication on base + 10n + 1, for
incremental state transfers (IST) on base + 10n + 2 (or a spare, + 4 to + 6: ist_ports) and
for full ones (SST, mariabackup) on base + 10n + 3, and its HTTP health for HAProxy on
base + 10n + 7. Data, configuration, logs and pid files
live under `base_dir`: one directory per node and haproxy.cfg. Processes outlive the Python
process that started them (scripts/cluster start, then scripts/cluster stop from another
shell): pid files are the truth, never a handle in memory."""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import MySQLdb

NODES = (1, 2, 3)
WRITER_NODE = 1  # HAProxy's one active server; 2 and 3 are its backups, in that order
GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
HEALTH_SCRIPT = Path(__file__).resolve().parent / "galera_health.py"
SYNCED = "4"  # wsrep_local_state: 1 joining, 2 donor, 3 joined, 4 synced
# Galera's failure detection, tightened from its defaults (5 s suspect, 15 s inactive) so that
# a killed node leaves the view, and the survivors commit again, within about 2 s. On one
# machine a lost keepalive means a dead process, not a congested network.
EVS_TIMEOUTS = (
    "evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;"
    "evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S"
)

# Every node checked each second over HTTP (scripts/galera_health.py answers from its poll of
# the node, a kept connection, no process forked per check), and every 250 ms once a check
# failed: two failures mark it down and cut its sessions (a killed node's clients find out
# at once instead of at their read timeout; a frozen node's last healthy answer is stale
# after 1 s, so it is down within about 2 s); two successes, up. A thawed node's stale
# "Synced, Primary" lasts one poll (200 ms), shorter than two checks.
HEALTH_CHECK = (
    "inter 1s fastinter 250ms downinter 1s rise 2 fall 2 on-marked-down shutdown-sessions"
)
# Node 1 takes the writes back only after 20 healthy checks in a row (about 5 s at 250 ms):
# each return cuts the backup's sessions (a burst of 503s), so it waits until the rejoined
# node has stayed Synced and primary. The backups keep rise 2: one that rejoined is up
# again at once, so a later kill of the writer sends the writes to it, not to the other
# backup first and then to it (a move without a fault).
WRITER_RETURN_RISE = 20


class ClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class NodePorts:
    mysql: int
    galera: int
    ist: int
    sst: int
    health: int  # HTTP, for HAProxy's check (scripts/galera_health.py)


def node_ports(base_port: int, node: int) -> NodePorts:
    first = base_port + 10 * node
    return NodePorts(mysql=first, galera=first + 1, ist=first + 2, sst=first + 3, health=first + 7)


def ist_ports(base_port: int, node: int) -> list[int]:
    """The IST port and its spares (base + 10n + 4..6). Galera opens its IST listener without
    SO_REUSEADDR, so for a minute after a transfer (its connections in TIME_WAIT) the port
    cannot be bound and a rejoin falls back to a full copy, or fails: a restart takes the
    first of these that is free."""
    first = base_port + 10 * node
    return [node_ports(base_port, node).ist, first + 4, first + 5, first + 6]


def all_ports(base_port: int) -> list[int]:
    ports = [base_port, base_port + 1]
    for node in NODES:
        p = node_ports(base_port, node)
        ports += [p.mysql, p.galera, p.sst, p.health, *ist_ports(base_port, node)]
    return ports


def free_base_port() -> int:
    """A base port whose every derived port (all_ports) is free on 127.0.0.1 now, below the
    kernel's ephemeral range: a node's IST and SST ports are bound only when it rejoins, and
    after a run with thousands of client connections (the drill) every port inside that
    range may be some socket's local port or in TIME_WAIT, so a rejoin (or the next start)
    would fail to bind. Ranges are tried from one chosen by the pid, wrapping around, so
    that concurrent runs seldom try the same one first."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    first = 20000 if low > 21000 else 10000
    bases = list(range(first, low - 40, 40))
    start_at = os.getpid() % len(bases)
    for base in bases[start_at:] + bases[:start_at]:
        if all(port_free(port) for port in all_ports(base)):
            return base
    raise ClusterError("no free range of ports below the ephemeral range")


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_for(condition: Callable[[], object], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def process_alive(pid: int | None) -> bool:
    """True for a running process; a zombie (killed, not yet reaped) counts as dead."""
    if pid is None:
        return False
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


class Cluster:
    def __init__(self, base_dir: Path, base_port: int, evs: str = EVS_TIMEOUTS):
        self.base_dir = Path(base_dir).resolve()
        self.base_port = base_port
        self.evs = evs  # Galera's failure detection (scripts/measure_galera_eviction.py)
        self.writer_port = base_port
        self.reader_port = base_port + 1
        # Children this process started, reaped after a kill so that they leave no zombie.
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # --- addresses ---------------------------------------------------------------------

    def haproxy_url(self, database: str = "") -> str:
        return f"mysql://root@127.0.0.1:{self.writer_port}/{database}"

    def reader_url(self, database: str = "") -> str:
        return f"mysql://root@127.0.0.1:{self.reader_port}/{database}"

    def node_url(self, node: int, database: str = "") -> str:
        return f"mysql://root@127.0.0.1:{self.ports(node).mysql}/{database}"

    def ports(self, node: int) -> NodePorts:
        return node_ports(self.base_port, node)

    def node_dir(self, node: int) -> Path:
        return self.base_dir / f"node{node}"

    def error_log(self, node: int) -> Path:
        return self.node_dir(node) / "error.log"

    # --- connections and state ---------------------------------------------------------

    def connect(self, node: int | None = None, database: str | None = None) -> MySQLdb.Connection:
        """A connection to one node, or through HAProxy's writer port when `node` is None."""
        port = self.writer_port if node is None else self.ports(node).mysql
        options = {"database": database} if database else {}
        return MySQLdb.connect(
            host="127.0.0.1", port=port, user="root", connect_timeout=2, **options
        )

    def wsrep_status(self, node: int) -> dict[str, str]:
        connection = self.connect(node)
        try:
            cursor = connection.cursor()
            cursor.execute("SHOW GLOBAL STATUS LIKE 'wsrep\\_%'")
            return {name: str(value) for name, value in cursor.fetchall()}
        finally:
            connection.close()

    def fully_joined(self) -> bool:
        """Every node Synced in one primary component of all of them (a thawed node may say
        Synced from its stale state while the others' view still lacks it)."""
        try:
            statuses = [self.wsrep_status(node) for node in NODES]
        except MySQLdb.Error:
            return False
        return all(
            status.get("wsrep_local_state") == SYNCED
            and status.get("wsrep_cluster_status") == "Primary"
            and status.get("wsrep_cluster_size") == str(len(NODES))
            for status in statuses
        )

    def is_synced(self, node: int) -> bool:
        """Running, in the primary component, and applying in step with the others."""
        if not self.running(node):
            return False
        try:
            status = self.wsrep_status(node)
        except MySQLdb.Error:
            return False
        return (
            status.get("wsrep_local_state") == SYNCED
            and status.get("wsrep_cluster_status") == "Primary"
            and status.get("wsrep_ready") == "ON"
        )

    def writer(self) -> int | None:
        """The node a new connection through HAProxy's writer port lands on (None: none)."""
        try:
            connection = self.connect()
        except MySQLdb.Error:
            return None
        try:
            cursor = connection.cursor()
            cursor.execute("SELECT @@wsrep_node_name")
            (name,) = cursor.fetchone()
        except MySQLdb.Error:
            return None
        finally:
            connection.close()
        return int(str(name).removeprefix("node"))

    def pid(self, node: int) -> int | None:
        return read_pid(self.node_dir(node) / "mariadbd.pid")

    def running(self, node: int) -> bool:
        return process_alive(self.pid(node))

    def haproxy_running(self) -> bool:
        return process_alive(read_pid(self.base_dir / "haproxy.pid"))

    def status(self) -> dict[str, object]:
        nodes: dict[str, object] = {}
        for node in NODES:
            state = "stopped"
            if self.running(node):
                try:
                    status = self.wsrep_status(node)
                    state = (
                        f"{status.get('wsrep_local_state_comment')} "
                        f"({status.get('wsrep_cluster_status')}, "
                        f"cluster size {status.get('wsrep_cluster_size')})"
                    )
                except MySQLdb.Error as error:
                    state = f"running, not answering ({error.args[0]})"
            nodes[f"node{node}"] = {"port": self.ports(node).mysql, "state": state}
        return {
            "haproxy": "running" if self.haproxy_running() else "stopped",
            "writer_url": self.haproxy_url(),
            "reader_url": self.reader_url(),
            "writer": self.writer(),
            "nodes": nodes,
        }

    # --- the life cycle ----------------------------------------------------------------

    def start(self, timeout: float = 120) -> "Cluster":
        """Bring every node and HAProxy up: bootstrap a new cluster, or join the nodes that
        are down to the ones that are up, or, after every node stopped or crashed, bootstrap
        from the most advanced node and join the others to it."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        for node in NODES:
            self._write_config(node)
        self._write_haproxy_config()
        if not any(self.is_synced(node) for node in NODES):
            first = self._bootstrap_node()
            self._start_node(first, bootstrap=True)
            self._wait_synced(first, timeout)
        for node in NODES:
            if not self.running(node):
                self._start_node(node)
        for node in NODES:
            self._wait_synced(node, timeout)
        if not self.health_running():
            self._start_health()
        if not self.haproxy_running():
            self._start_haproxy()
        wait_for(lambda: self.writer() == WRITER_NODE, timeout=30, what="HAProxy to pick node 1")
        return self

    def stop(self) -> None:
        """A clean shutdown, backups first: the writer leaves last, so its grastate.dat says
        safe_to_bootstrap: 1 and the next start bootstraps from it. The supervisor goes
        first: it would start what is being stopped."""
        self.stop_supervisor()
        self._stop_pid(read_pid(self.base_dir / "haproxy.pid"))
        self._stop_pid(read_pid(self.base_dir / "health.pid"))
        for node in sorted(NODES, reverse=True):
            self._stop_pid(self.pid(node), timeout=120)

    def kill(self, node: int) -> None:
        """SIGKILL: no shutdown; InnoDB recovers and the node rejoins on restart()."""
        pid = self.pid(node)
        if not process_alive(pid):
            raise ClusterError(f"node{node} is not running")
        assert pid is not None
        # The node's whole process group, as when its machine dies: an SST script it was
        # running (socat, mariabackup) must not outlive it and hold its ports.
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        child = self._children.pop(pid, None)
        if child is not None:
            child.wait(timeout=30)
        wait_for(lambda: not process_alive(pid), timeout=30, what=f"node{node} to die")

    def freeze(self, node: int) -> None:
        """SIGSTOP the node's process group: it holds its connections and answers nothing, as
        a machine that stalls (a long GC-like pause, a hung disk) does."""
        self._signal_group(node, signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        """SIGCONT after freeze(): the node runs on from where it stopped."""
        self._signal_group(node, signal.SIGCONT)

    def _signal_group(self, node: int, signum: int) -> None:
        pid = self.pid(node)
        if not process_alive(pid):
            raise ClusterError(f"node{node} is not running")
        assert pid is not None
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)

    def restart(self, node: int, timeout: float = 120) -> None:
        """Start a stopped or killed node as a joiner of the running cluster (IST from a
        donor's gcache when it has the missing write sets, else a full SST) and wait until it
        is Synced."""
        if self.running(node):
            raise ClusterError(f"node{node} is already running")
        if not any(self.is_synced(other) for other in NODES if other != node):
            raise ClusterError(f"no running node for node{node} to join; use start()")
        self._start_node(node)
        self._wait_synced(node, timeout)

    def heal(self) -> str | None:
        """One look by the supervisor, and what it did (None: nothing to do). A node that is
        down rejoins the synced ones; when every node is down (a crash of the whole cluster:
        no grastate.dat says safe_to_bootstrap), start() bootstraps from the most advanced
        one and joins the others to it. Nodes up but none synced yet: wait for them."""
        for child in list(self._children.values()):
            child.poll()  # reap what died, so that it does not linger as a zombie
        down = [node for node in NODES if not self.running(node)]
        if not down:
            return None
        if len(down) == len(NODES):
            self.start()
            return "every node was down: recovered from the most advanced one"
        if not any(self.is_synced(node) for node in NODES if node not in down):
            return None
        for node in down:
            self.restart(node)
        return f"restarted {', '.join(f'node{node}' for node in down)}"

    def supervise(self, interval: float = 1.0) -> None:
        """heal() every `interval` seconds, for good: the cluster restarts what dies without a
        human (what `restart: unless-stopped` and Galera's pc.recovery do under compose)."""
        while True:
            try:
                done = self.heal()
            except (ClusterError, MySQLdb.Error, OSError) as error:
                done = f"could not heal yet: {error}"
            if done:
                print(time.strftime("%Y-%m-%d %H:%M:%S"), done, flush=True)
            time.sleep(interval)

    def start_supervisor(self) -> None:
        """`supervise` in a process of its own, which outlives the caller (pid file)."""
        if self.supervisor_running():
            return
        pid_file = self.base_dir / "supervisor.pid"
        command = [sys.executable, "-m", "scripts.cluster_nodes", "supervise"]
        environment = {
            **os.environ,
            "CLUSTER_DIR": str(self.base_dir),
            "CLUSTER_BASE_PORT": str(self.base_port),
        }
        with open(self.base_dir / "supervisor.log", "ab") as output:
            child = subprocess.Popen(
                command,
                cwd=Path(__file__).resolve().parent.parent,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        self._children[child.pid] = child
        pid_file.write_text(f"{child.pid}\n")

    def stop_supervisor(self) -> None:
        self._stop_pid(read_pid(self.base_dir / "supervisor.pid"))

    def supervisor_running(self) -> bool:
        return process_alive(read_pid(self.base_dir / "supervisor.pid"))

    def wait_writer(self, node: int, timeout: float = 30) -> None:
        wait_for(lambda: self.writer() == node, timeout=timeout, what=f"HAProxy to pick node{node}")

    # --- inside ------------------------------------------------------------------------

    def _bootstrap_node(self) -> int:
        """The node a whole-cluster start bootstraps from: node 1 on a new cluster; else the
        one whose grastate.dat says safe_to_bootstrap: 1 (it left last, cleanly); else, after
        a crash of every node, the one with the highest recovered seqno, marked safe."""
        if not (self.node_dir(WRITER_NODE) / "data" / "mysql").exists():
            return WRITER_NODE
        safe = [node for node in NODES if self._grastate(node).get("safe_to_bootstrap") == "1"]
        if safe:
            return safe[0]
        seqnos = {node: self._recovered_seqno(node) for node in NODES}
        best = max(NODES, key=lambda node: (seqnos[node], -node))
        self._mark_safe_to_bootstrap(best)
        return best

    def _grastate(self, node: int) -> dict[str, str]:
        path = self.node_dir(node) / "data" / "grastate.dat"
        if not path.exists():
            return {}
        pairs = (line.split(":", 1) for line in path.read_text().splitlines() if ":" in line)
        return {key.strip(): value.strip() for key, value in pairs}

    def _recovered_position(self, node: int) -> str | None:
        """`mariadbd --wsrep-recover` (what galera_recovery runs before systemd starts a
        node): the last committed position InnoDB holds, "uuid:seqno", which a node that was
        killed (grastate.dat says seqno: -1) passes as --wsrep-start-position so that it asks
        for the write sets it missed (IST) rather than for a whole copy (SST)."""
        if not (self.node_dir(node) / "data" / "mysql").exists():
            return None
        log = self.node_dir(node) / "recover.log"
        log.unlink(missing_ok=True)
        subprocess.run(
            [
                "mariadbd", f"--defaults-file={self.node_dir(node) / 'my.cnf'}",
                "--wsrep-recover", f"--log-error={log}",
            ],
            check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        found = re.findall(r"Recovered position: ([0-9a-f-]+:-?\d+)", log.read_text())
        return found[-1] if found else None

    def _recovered_seqno(self, node: int) -> int:
        position = self._recovered_position(node)
        return int(position.rsplit(":", 1)[1]) if position else -1

    def _mark_safe_to_bootstrap(self, node: int) -> None:
        path = self.node_dir(node) / "data" / "grastate.dat"
        path.write_text(re.sub(r"safe_to_bootstrap: *0", "safe_to_bootstrap: 1", path.read_text()))

    def _write_config(self, node: int, ist_port: int | None = None) -> None:
        directory = self.node_dir(node)
        (directory / "tmp").mkdir(parents=True, exist_ok=True)
        ports = self.ports(node)
        ist = ist_port or ports.ist
        peers = ",".join(f"127.0.0.1:{self.ports(n).galera}" for n in NODES)
        # A rejoining node takes its state from a backup rather than the writer: a donor is
        # out of HAProxy's rotation while it sends. The trailing comma allows any node.
        donors = ",".join(f"node{n}" for n in sorted(NODES, reverse=True) if n != node) + ","
        # Flow control at 256 queued write sets (Galera's default is 16): three nodes share
        # this machine's cores, and a backup starved for a moment must not pause the writer.
        provider_options = (
            f"base_host=127.0.0.1;base_port={ports.galera};"
            f"gmcast.listen_addr=tcp://127.0.0.1:{ports.galera};ist.recv_addr=127.0.0.1:{ist};"
            f"gcache.size=128M;gcache.recover=yes;gcs.fc_limit=256;gcs.fc_factor=0.9;{self.evs}"
        )
        lines = [
            "[mariadbd]",
            f"datadir={directory / 'data'}",
            f"port={ports.mysql}",
            "bind-address=127.0.0.1",
            f"socket={directory / 'mariadbd.sock'}",
            f"pid-file={directory / 'mariadbd.pid'}",
            f"log-error={directory / 'error.log'}",
            # Its own temporary directory: temporary tables are named by pid, and processes
            # in other pid namespaces share the machine's /tmp.
            f"tmpdir={directory / 'tmp'}",
            "user=root",
            "skip-name-resolve",
            "innodb_buffer_pool_size=64M",
            "performance_schema=OFF",
            "character-set-server=utf8mb4",
            "collation-server=utf8mb4_unicode_ci",
            "max_connections=300",
            # What Galera requires: row-based write sets, InnoDB, interleaved auto-increments.
            "binlog_format=ROW",
            "default_storage_engine=InnoDB",
            "innodb_autoinc_lock_mode=2",
            "wsrep_on=ON",
            f"wsrep_provider={GALERA_PROVIDER}",
            "wsrep_cluster_name=coupons",
            f"wsrep_cluster_address=gcomm://{peers}",
            f"wsrep_node_name=node{node}",
            f"wsrep_node_address=127.0.0.1:{ports.galera}",
            f"wsrep_node_incoming_address=127.0.0.1:{ports.mysql}",
            # mariabackup copies a running donor without blocking it (rsync would lock it for
            # the copy); it connects to the donor as root over the socket.
            "wsrep_sst_method=mariabackup",
            "wsrep_sst_auth=root:",
            f"wsrep_sst_receive_address=127.0.0.1:{ports.sst}",
            f"wsrep_sst_donor={donors}",
            f'wsrep_provider_options="{provider_options}"',
            "wsrep_slave_threads=2",
            "",
        ]
        (directory / "my.cnf").write_text("\n".join(lines))

    def _write_haproxy_config(self) -> None:
        servers = {
            n: f"127.0.0.1:{self.ports(n).mysql} check port {self.ports(n).health}" for n in NODES
        }
        text = f"""# Written by scripts/cluster_nodes.py; every start rewrites it.
global
    maxconn 2000

defaults
    mode tcp
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 2s
    # scripts/galera_health.py answers 200 for a Synced node of the primary component.
    option httpchk GET /
    http-check expect status 200
    default-server {HEALTH_CHECK}

# Single writer: node 1 while it is synced, else the first synced backup. When node 1 comes
# back, the backup's sessions are cut so that no two nodes take writes at once.
listen writer
    bind 127.0.0.1:{self.writer_port}
    server node1 {servers[1]} rise {WRITER_RETURN_RISE} on-marked-up shutdown-backup-sessions
    server node2 {servers[2]} backup
    server node3 {servers[3]} backup

# Reads that need not see the caller's own writes (DATABASE_REPLICA_URL): nodes 2 and 3.
listen reader
    bind 127.0.0.1:{self.reader_port}
    balance leastconn
    server node2 {servers[2]}
    server node3 {servers[3]}
    server node1 {servers[1]} backup
"""
        (self.base_dir / "haproxy.cfg").write_text(text)

    def _spawn(self, command: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as output:
            child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,  # outlives `scripts/cluster start` and its terminal
            )
        self._children[child.pid] = child
        return child

    def _start_node(self, node: int, bootstrap: bool = False) -> None:
        directory = self.node_dir(node)
        datadir = directory / "data"
        if not (datadir / "mysql").exists():
            if bootstrap:
                self._install(datadir)
            else:
                # A joiner's data comes whole from its donor (SST).
                shutil.rmtree(datadir, ignore_errors=True)
                datadir.mkdir(parents=True)
        command = ["mariadbd", f"--defaults-file={directory / 'my.cnf'}"]
        if bootstrap:
            command.append("--wsrep-new-cluster")
        if self._grastate(node).get("seqno") == "-1":  # it crashed: find where it stopped
            position = self._recovered_position(node)
            if position and not position.endswith(":-1"):
                command.append(f"--wsrep-start-position={position}")
        candidates = ist_ports(self.base_port, node)
        self._write_config(node, next((p for p in candidates if port_free(p)), candidates[0]))
        (directory / "mariadbd.pid").unlink(missing_ok=True)  # a killed node's, stale
        child = self._spawn(command, directory / "stdout.log")
        wait_for(
            lambda: self.running(node) or child.poll() is not None,
            timeout=30,
            what=f"node{node} to write its pid file",
        )
        if not self.running(node):
            raise ClusterError(f"node{node} exited at start; see {self.error_log(node)}")

    def _install(self, datadir: Path) -> None:
        """A fresh data directory; root may connect from 127.0.0.1 without a password."""
        datadir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root",
                f"--tmpdir={datadir.parent / 'tmp'}",
                "--auth-root-authentication-method=normal", "--skip-test-db",
            ],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def _wait_synced(self, node: int, timeout: float) -> None:
        def synced() -> bool:
            if not self.running(node):
                raise ClusterError(f"node{node} exited; see {self.error_log(node)}")
            return self.is_synced(node)

        wait_for(synced, timeout=timeout, what=f"node{node} to be Synced")

    def _start_health(self) -> None:
        """scripts/galera_health.py, HAProxy's HTTP check of every node, in a process of its
        own (never in a node's process group: a frozen node must not freeze its check)."""
        pid_file = self.base_dir / "health.pid"
        pid_file.unlink(missing_ok=True)
        pairs = [f"--node={self.ports(n).mysql}:{self.ports(n).health}" for n in NODES]
        command = [sys.executable, str(HEALTH_SCRIPT), *pairs]
        child = self._spawn(command, self.base_dir / "health.log")
        pid_file.write_text(f"{child.pid}\n")
        wait_for(
            lambda: (
                child.poll() is not None
                or all(self._port_open(self.ports(n).health) for n in NODES)
            ),
            timeout=10,
            what="the nodes' health checks to listen",
        )
        if child.poll() is not None:
            raise ClusterError(f"the health checks exited; see {self.base_dir / 'health.log'}")

    def health_running(self) -> bool:
        return process_alive(read_pid(self.base_dir / "health.pid"))

    def _start_haproxy(self) -> None:
        pid_file = self.base_dir / "haproxy.pid"
        pid_file.unlink(missing_ok=True)
        command = ["haproxy", "-f", str(self.base_dir / "haproxy.cfg"), "-db"]
        child = self._spawn(command, self.base_dir / "haproxy.log")
        pid_file.write_text(f"{child.pid}\n")
        wait_for(
            lambda: child.poll() is not None or self._port_open(self.writer_port),
            timeout=10,
            what="HAProxy to listen",
        )
        if child.poll() is not None:
            raise ClusterError(f"haproxy exited; see {self.base_dir / 'haproxy.log'}")

    @staticmethod
    def _port_open(port: int) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def _stop_pid(self, pid: int | None, timeout: float = 30) -> None:
        if not process_alive(pid):
            return
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        child = self._children.pop(pid, None)
        if child is not None:
            child.wait(timeout=timeout)
        wait_for(lambda: not process_alive(pid), timeout=timeout, what=f"process {pid} to stop")


def start(base_dir: Path | str, base_port: int, timeout: float = 120) -> Cluster:
    """The cluster under `base_dir` on ports from `base_port`, up and synced, HAProxy's
    writer on node 1."""
    return Cluster(Path(base_dir), base_port).start(timeout=timeout)


DEFAULT_DIR = Path(__file__).resolve().parent.parent / "var" / "cluster"
DEFAULT_BASE_PORT = 13300


def main(argv: list[str] | None = None) -> None:
    """scripts/cluster: the same operations from a shell."""
    parser = argparse.ArgumentParser(prog="scripts/cluster", description=__doc__.splitlines()[0])
    parser.add_argument(
        "command",
        choices=[
            "start",
            "stop",
            "status",
            "env",
            "kill-writer",
            "kill",
            "restart",
            "supervise",
        ],
    )
    parser.add_argument("node", nargs="?", type=int, choices=NODES, help="for kill and restart")
    parser.add_argument("--database", default="coupons", help="named in the printed URLs")
    args = parser.parse_args(argv)
    cluster = Cluster(
        Path(os.environ.get("CLUSTER_DIR", DEFAULT_DIR)),
        int(os.environ.get("CLUSTER_BASE_PORT", DEFAULT_BASE_PORT)),
    )
    if args.command in ("kill", "restart") and args.node is None:
        parser.error(f"{args.command} needs a node: 1, 2 or 3")
    if args.command == "start":
        cluster.start()
        cluster.start_supervisor()
    elif args.command == "supervise":
        cluster.supervise()
    elif args.command == "stop":
        cluster.stop()
    elif args.command == "kill-writer":
        writer = cluster.writer()
        if writer is None:
            raise SystemExit("no writer: HAProxy has no synced node")
        cluster.kill(writer)
        print(f"killed node{writer}")
    elif args.command == "kill":
        cluster.kill(args.node)
    elif args.command == "restart":
        cluster.restart(args.node)
    if args.command in ("start", "env"):
        print(f"export DATABASE_URL={cluster.haproxy_url(args.database)}")
        print(f"export DATABASE_REPLICA_URL={cluster.reader_url(args.database)}")
    if args.command == "status":
        print(json.dumps(cluster.status(), indent=2))


if __name__ == "__main__":
    main()
