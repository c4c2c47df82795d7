"""A local 3-node MariaDB Galera cluster behind HAProxy, for `make cluster`, the tests marked
`cluster`, the drills, the bench and the measurement scripts (SPEC section 22;
docs/operations.md has the production layout; docs/decisions/0800-* says why).

    from localservers.galera import free_base_port, start
    cluster = start(base_dir, free_base_port())  # bootstraps, or rejoins what is there
    cluster.haproxy_url("coupons")               # DATABASE_URL: every connection to the writer
    cluster.writer()                             # 1, 2 or 3: the node HAProxy sends writes to
    cluster.kill(1); cluster.restart(1)          # SIGKILL; rejoin (IST or SST) until Synced
    cluster.stop()

layout.py says where each part listens, configs.py writes my.cnf and haproxy.cfg,
cluster.py runs the life cycle and the supervisor, health.py answers HAProxy's checks."""

from localservers.galera.cluster import Cluster, ClusterError, start
from localservers.galera.configs import EVS_TIMEOUTS
from localservers.galera.layout import NODES, WRITER_NODE, free_base_port, ist_ports

__all__ = [
    "EVS_TIMEOUTS",
    "NODES",
    "WRITER_NODE",
    "Cluster",
    "ClusterError",
    "free_base_port",
    "ist_ports",
    "start",
]
