"""A Redis Cluster of the test's own: three masters (no replicas) on free ports in a temporary
directory, created with `redis-cli --cluster create`. Never the shared Redis."""

import subprocess
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from localservers.ports import free_port_block
from localservers.redis_server import RedisServer
from localservers.waiting import wait_until

BUS_OFFSET = 10000  # each node also listens on its port + 10000, the cluster bus
START_TIMEOUT = 20.0


class OwnRedisCluster:
    def __init__(self, directory: Path, masters: int = 3):
        first = free_port_block(masters, also_free=BUS_OFFSET)
        self.servers = [
            RedisServer(
                directory / str(port),
                port,
                options=(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                ),
            )  # fmt: skip
            for port in range(first, first + masters)
        ]
        self.ports = [server.port for server in self.servers]

    @property
    def url(self) -> str:
        """Any one node: a cluster client discovers the rest."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self) -> None:
        for server in self.servers:
            server.start()
        subprocess.run(
            ["redis-cli", "--cluster", "create"]
            + [f"127.0.0.1:{port}" for port in self.ports]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        for node in self.nodes():
            self._wait(lambda node=node: b"cluster_state:ok" in node.execute_command(
                "CLUSTER", "INFO"
            ), "agree on the slots")  # fmt: skip

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def nodes(self) -> list[redis.Redis]:
        """A plain client on each master, for per-node commands (SCRIPT FLUSH, SCRIPT EXISTS)."""
        return [
            redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=1, retry=None)
            for port in self.ports
        ]

    def client(self) -> RedisCluster:
        return RedisCluster.from_url(self.url, socket_timeout=2, socket_connect_timeout=1)

    def _wait(self, check, what: str) -> None:
        def checked() -> bool:
            exited = [str(server.port) for server in self.servers if not server.running]
            if exited:
                raise RuntimeError(f"redis-server on port(s) {', '.join(exited)} exited")
            return check()

        wait_until(
            checked,
            timeout=START_TIMEOUT,
            what=f"the Redis Cluster nodes to {what}",
            interval=0.05,
            ignoring=(redis.RedisError,),
        )
