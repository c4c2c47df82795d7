"""scripts/cluster: the local cluster's operations from a shell (`python -m localservers.galera
start|stop|status|env|kill-writer|kill N|restart N|supervise`)."""

import argparse
import json
import os
from pathlib import Path

from localservers.galera.cluster import PROJECT_DIR, Cluster
from localservers.galera.layout import NODES

DEFAULT_DIR = PROJECT_DIR / "var" / "cluster"
DEFAULT_BASE_PORT = 13300


def main(argv: list[str] | None = None) -> None:
    """scripts/cluster: the same operations from a shell."""
    parser = argparse.ArgumentParser(
        prog="scripts/cluster", description="The local 3-node Galera cluster behind HAProxy"
    )
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
