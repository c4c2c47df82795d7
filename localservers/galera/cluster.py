"""The local 3-node MariaDB Galera cluster's life cycle: start (bootstrap, rejoin, or recover
from the most advanced node after a crash of all three), stop, kill, freeze, thaw, restart,
and the supervisor that heals it without a human. Data, configuration, logs and process
records live under `base_dir`, one directory per node; processes outlive the Python process that
started them (scripts/cluster start, then scripts/cluster stop from another shell), so each
is known by a file of our own that records its pid and start time (ProcessRecord): never by a
pid alone, never by mariadbd's own pid file."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import MySQLdb

from localservers.galera.configs import EVS_TIMEOUTS, haproxy_config, node_config
from localservers.galera.layout import NODES, WRITER_NODE, NodePorts, ist_ports, node_ports
from localservers.ports import port_free, port_open
from localservers.processes import ProcessRecord, record_alive
from localservers.waiting import wait_until

PROJECT_DIR = Path(__file__).resolve().parents[2]
SYNCED = "4"  # wsrep_local_state: 1 joining, 2 donor, 3 joined, 4 synced


class ClusterError(RuntimeError):
    pass


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

    def process(self, node: int) -> ProcessRecord | None:
        """The node's mariadbd as started (never mariadbd's own pid file, which it empties and
        rewrites while running)."""
        return ProcessRecord.load(self.node_dir(node) / "mariadbd.process")

    def running(self, node: int) -> bool:
        return record_alive(self.process(node))

    def haproxy_running(self) -> bool:
        return record_alive(ProcessRecord.load(self.base_dir / "haproxy.process"))

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
        for node in NODES:  # one joiner at a time: each takes a donor for its copy
            if not self.running(node):
                self._start_node(node)
                self._wait_synced(node, timeout)
        for node in NODES:
            self._wait_synced(node, timeout)
        if not self.health_running():
            self._start_health()
        if not self.haproxy_running():
            self._start_haproxy()
        wait_until(lambda: self.writer() == WRITER_NODE, timeout=30, what="HAProxy to pick node 1")
        return self

    def stop(self) -> None:
        """A clean shutdown, backups first: the writer leaves last, so its grastate.dat says
        safe_to_bootstrap: 1 and the next start bootstraps from it. The supervisor goes
        first: it would start what is being stopped."""
        self.stop_supervisor()
        self._stop(ProcessRecord.load(self.base_dir / "haproxy.process"))
        self._stop(ProcessRecord.load(self.base_dir / "health.process"))
        for node in sorted(NODES, reverse=True):
            self._stop(self.process(node), timeout=120)

    def kill(self, node: int) -> None:
        """SIGKILL: no shutdown; InnoDB recovers and the node rejoins on restart()."""
        record = self.process(node)
        # The node's whole process group, as when its machine dies: an SST script it was
        # running (socat, mariabackup) must not outlive it and hold its ports.
        if record is None or not record.send(signal.SIGKILL, group=True):
            raise ClusterError(f"node{node} is not running")
        child = self._children.pop(record.pid, None)
        if child is not None:
            child.wait(timeout=30)
        wait_until(lambda: not record.alive(), timeout=30, what=f"node{node} to die")

    def freeze(self, node: int) -> None:
        """SIGSTOP the node's process group: it holds its connections and answers nothing, as
        a machine that stalls (a long GC-like pause, a hung disk) does."""
        self._signal_group(node, signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        """SIGCONT after freeze(): the node runs on from where it stopped."""
        self._signal_group(node, signal.SIGCONT)

    def _signal_group(self, node: int, signum: int) -> None:
        record = self.process(node)
        if record is None or not record.send(signum, group=True):
            raise ClusterError(f"node{node} is not running")

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
        """One look by the supervisor, and what it did (None: nothing to do yet).

        - A node that is down rejoins the synced ones, but only once their view no longer
          counts it: restarted under its old identity before the survivors evicted it (EVS
          timeouts, about 3 s), their view change fails and every write waits for them to
          re-form, which made one kill an outage of up to 11 s.
        - One node left of three (two lost at once) is out of quorum (non-Primary); once its
          view holds only itself and the other two processes are gone, it becomes the primary
          component (pc.bootstrap): Galera delivers every write set to each member of the
          primary component before any of them commits it, so the last member holds every
          commit. The others then rejoin it, one at a time.
        - Every node down (a crash of the whole cluster, so no grastate.dat says
          safe_to_bootstrap): start() bootstraps from the most advanced one and joins the
          others to it."""
        for child in list(self._children.values()):
            child.poll()  # reap what died, so that it does not linger as a zombie
        down = [node for node in NODES if not self.running(node)]
        if not down:
            return None
        if len(down) == len(NODES):
            self.start()
            return "every node was down: recovered from the most advanced one"
        up = [node for node in NODES if node not in down]
        views = {node: self._view(node) for node in up}
        synced = [node for node in up if _synced_in_primary(views[node])]
        if synced:
            if any(int(views[node].get("wsrep_cluster_size", 0)) > len(up) for node in synced):
                return None  # the survivors still count a lost node: wait for its eviction
            for node in down:
                self.restart(node)
            return f"restarted {', '.join(f'node{node}' for node in down)}"
        (last,) = up if len(up) == 1 else (None,)
        if last is not None and _alone_without_quorum(views[last]):
            self._bootstrap_in_place(last)
            return f"node{last} was the last one up, out of quorum: made it the primary component"
        return None

    def _view(self, node: int) -> dict[str, str]:
        try:
            return self.wsrep_status(node)
        except MySQLdb.Error:
            return {}

    def _bootstrap_in_place(self, node: int) -> None:
        connection = self.connect(node)
        try:
            connection.cursor().execute("SET GLOBAL wsrep_provider_options = 'pc.bootstrap=YES'")
        finally:
            connection.close()
        self._wait_synced(node, timeout=30)

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
        """`supervise` in a process of its own, which outlives the caller (its record)."""
        if self.supervisor_running():
            return
        command = [sys.executable, "-m", "localservers.galera", "supervise"]
        environment = {
            **os.environ,
            "CLUSTER_DIR": str(self.base_dir),
            "CLUSTER_BASE_PORT": str(self.base_port),
        }
        with open(self.base_dir / "supervisor.log", "ab") as output:
            child = subprocess.Popen(
                command,
                cwd=PROJECT_DIR,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        self._children[child.pid] = child
        self._record(child, self.base_dir / "supervisor.process")

    def stop_supervisor(self) -> None:
        self._stop(ProcessRecord.load(self.base_dir / "supervisor.process"))

    def supervisor_running(self) -> bool:
        return record_alive(ProcessRecord.load(self.base_dir / "supervisor.process"))

    def wait_writer(self, node: int, timeout: float = 30) -> None:
        wait_until(
            lambda: self.writer() == node, timeout=timeout, what=f"HAProxy to pick node{node}"
        )

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
        text = node_config(
            node,
            directory=directory,
            base_port=self.base_port,
            ist_port=ist_port or self.ports(node).ist,
            evs=self.evs,
        )
        (directory / "my.cnf").write_text(text)

    def _write_haproxy_config(self) -> None:
        (self.base_dir / "haproxy.cfg").write_text(haproxy_config(self.base_port))

    def _spawn(self, command: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as output:
            child = subprocess.Popen(
                command,
                cwd=PROJECT_DIR,
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
        child = self._spawn(command, directory / "stdout.log")
        self._record(child, directory / "mariadbd.process")

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

        wait_until(synced, timeout=timeout, what=f"node{node} to be Synced")

    def _start_health(self) -> None:
        """localservers.galera.health, HAProxy's HTTP check of every node, in a process of its
        own (never in a node's process group: a frozen node must not freeze its check)."""
        pairs = [f"--node={self.ports(n).mysql}:{self.ports(n).health}" for n in NODES]
        command = [sys.executable, "-m", "localservers.galera.health", *pairs]
        child = self._spawn(command, self.base_dir / "health.log")
        self._record(child, self.base_dir / "health.process")
        wait_until(
            lambda: child.poll() is not None or all(port_open(self.ports(n).health) for n in NODES),
            timeout=10,
            what="the nodes' health checks to listen",
        )
        if child.poll() is not None:
            raise ClusterError(f"the health checks exited; see {self.base_dir / 'health.log'}")

    def health_running(self) -> bool:
        return record_alive(ProcessRecord.load(self.base_dir / "health.process"))

    def _start_haproxy(self) -> None:
        command = ["haproxy", "-f", str(self.base_dir / "haproxy.cfg"), "-db"]
        child = self._spawn(command, self.base_dir / "haproxy.log")
        self._record(child, self.base_dir / "haproxy.process")
        wait_until(
            lambda: child.poll() is not None or port_open(self.writer_port),
            timeout=10,
            what="HAProxy to listen",
        )
        if child.poll() is not None:
            raise ClusterError(f"haproxy exited; see {self.base_dir / 'haproxy.log'}")

    def _record(self, child: subprocess.Popen[bytes], path: Path) -> None:
        """The child's record in `path`, as it starts (none when it died at once: the waits
        that follow say so)."""
        record = ProcessRecord.of(child.pid)
        if record is None:
            path.unlink(missing_ok=True)
        else:
            record.save(path)

    def _stop(self, record: ProcessRecord | None, timeout: float = 30) -> None:
        if record is None or not record.send(signal.SIGTERM):
            return
        child = self._children.pop(record.pid, None)
        if child is not None:
            child.wait(timeout=timeout)
        wait_until(
            lambda: not record.alive(), timeout=timeout, what=f"process {record.pid} to stop"
        )


def _synced_in_primary(view: dict[str, str]) -> bool:
    return view.get("wsrep_local_state") == SYNCED and view.get("wsrep_cluster_status") == "Primary"


def _alone_without_quorum(view: dict[str, str]) -> bool:
    return (
        view.get("wsrep_cluster_status") == "non-Primary" and view.get("wsrep_cluster_size") == "1"
    )


def start(base_dir: Path | str, base_port: int, timeout: float = 120) -> Cluster:
    """The cluster under `base_dir` on ports from `base_port`, up and synced, HAProxy's
    writer on node 1."""
    return Cluster(Path(base_dir), base_port).start(timeout=timeout)
