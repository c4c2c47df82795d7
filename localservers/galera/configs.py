"""The local cluster's configuration files: each node's my.cnf and HAProxy's haproxy.cfg,
written from the layout (deploy/galera/ holds the production ones, with the reasons for
where they differ)."""

from pathlib import Path

from localservers.galera.layout import NODES, node_ports

GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
# Galera's failure detection, tightened from its defaults (5 s suspect, 15 s inactive) so that
# a killed node leaves the view, and the survivors commit again, within about 2 s. On one
# machine a lost keepalive means a dead process, not a congested network.
EVS_TIMEOUTS = (
    "evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;"
    "evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S"
)

# Every node checked each second over HTTP (localservers.galera.health answers from its poll of
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


def node_config(
    node: int, *, directory: Path, base_port: int, ist_port: int, evs: str = EVS_TIMEOUTS
) -> str:
    """my.cnf of node `node`, whose data, socket, pid file and logs live under `directory`;
    its incremental state transfers arrive on `ist_port` (layout.ist_ports)."""
    ports = node_ports(base_port, node)
    peers = ",".join(f"127.0.0.1:{node_ports(base_port, n).galera}" for n in NODES)
    # A rejoining node takes its state from a backup rather than the writer: a donor is
    # out of HAProxy's rotation while it sends. The trailing comma allows any node.
    donors = ",".join(f"node{n}" for n in sorted(NODES, reverse=True) if n != node) + ","
    # Flow control at 256 queued write sets (Galera's default is 16): three nodes share
    # this machine's cores, and a backup starved for a moment must not pause the writer.
    provider_options = (
        f"base_host=127.0.0.1;base_port={ports.galera};"
        f"gmcast.listen_addr=tcp://127.0.0.1:{ports.galera};ist.recv_addr=127.0.0.1:{ist_port};"
        f"gcache.size=128M;gcache.recover=yes;gcs.fc_limit=256;gcs.fc_factor=0.9;{evs}"
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
    return "\n".join(lines)


def haproxy_config(base_port: int) -> str:
    """One writer (node 1 while it is healthy, else the first healthy backup) on base_port,
    the readers on base_port + 1; every node checked over HTTP."""
    ports = {n: node_ports(base_port, n) for n in NODES}
    servers = {n: f"127.0.0.1:{ports[n].mysql} check port {ports[n].health}" for n in NODES}
    return f"""# Written by localservers.galera; every start rewrites it.
global
    maxconn 2000

defaults
    mode tcp
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 2s
    # localservers.galera.health answers 200 for a Synced node of the primary component.
    option httpchk GET /
    http-check expect status 200
    default-server {HEALTH_CHECK}

# Single writer: node 1 while it is synced, else the first synced backup. When node 1 comes
# back, the backup's sessions are cut so that no two nodes take writes at once.
listen writer
    bind 127.0.0.1:{base_port}
    server node1 {servers[1]} rise {WRITER_RETURN_RISE} on-marked-up shutdown-backup-sessions
    server node2 {servers[2]} backup
    server node3 {servers[3]} backup

# Reads that need not see the caller's own writes (DATABASE_REPLICA_URL): nodes 2 and 3.
listen reader
    bind 127.0.0.1:{base_port + 1}
    balance leastconn
    server node2 {servers[2]}
    server node3 {servers[3]}
    server node1 {servers[1]} backup
"""
