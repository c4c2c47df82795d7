"""A Redis Cluster of the test's own: three masters (no replicas) on free ports in a temporary
directory, created with `redis-cli --cluster create`. Never the shared Redis."""

import random
import socket
import subprocess
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from tests.support.waiting import wait_until

# Each node also listens on its port + 10000 (the cluster bus), so ports come from a range
# where both fit below 65536 and away from the ephemeral range other tests' servers take.
PORT_RANGE = (20000, 30000)
BUS_OFFSET = 10000
START_TIMEOUT = 20.0


def bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: list[int]) -> int:
    for _ in range(1000):
        port = random.randrange(*PORT_RANGE)
        if port not in taken and bindable(port) and bindable(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free port pair for a Redis Cluster node")


class OwnRedisCluster:
    def __init__(self, directory: Path, masters: int = 3):
        self.dir = directory
        self.ports: list[int] = []
        for _ in range(masters):
            self.ports.append(free_cluster_port(self.ports))
        self.processes: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        """Any one node: a cluster client discovers the rest."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self) -> None:
        for port in self.ports:
            node_dir = self.dir / str(port)
            node_dir.mkdir()
            self.processes.append(
                subprocess.Popen(
                    [
                        "redis-server",
                        "--port", str(port),
                        "--bind", "127.0.0.1",
                        "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "2000",
                        "--save", "",
                        "--appendonly", "no",
                        "--dir", str(node_dir),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )  # fmt: skip
        for node in self.nodes():
            self._wait(node.ping, "answer")
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
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)
        self.processes = []

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
            exited = [p.args[2] for p in self.processes if p.poll() is not None]
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
