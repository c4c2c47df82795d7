"""Where the local cluster's parts listen. All on 127.0.0.1 and all derived from one base
port: HAProxy's writer port is base, its reader port base + 1 (DATABASE_REPLICA_URL: nodes 2
and 3, node 1 as the fallback); node n (1-3) listens for SQL on base + 10n, for Galera
replication on base + 10n + 1, for incremental state transfers (IST) on base + 10n + 2 (or a
spare, + 4 to + 6: ist_ports), for full ones (SST, mariabackup) on base + 10n + 3, and its
HTTP health for HAProxy on base + 10n + 7."""

from dataclasses import dataclass

from localservers.ports import free_port_block

NODES = (1, 2, 3)
WRITER_NODE = 1  # HAProxy's one active server; 2 and 3 are its backups, in that order
PORTS_PER_CLUSTER = 10 * (len(NODES) + 1)


@dataclass(frozen=True)
class NodePorts:
    mysql: int
    galera: int
    ist: int
    sst: int
    health: int  # HTTP, for HAProxy's check (localservers.galera.health)


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


def free_base_port() -> int:
    """A base port whose whole block is free now, below the ephemeral range (a node binds
    its IST and SST ports only when it rejoins, long after the start)."""
    return free_port_block(PORTS_PER_CLUSTER)
