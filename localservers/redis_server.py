"""A redis-server of our own on its own port: nothing kept on disk, never the shared one, so
that a test or a drill may stop, flush or slow it and a bench may read its counters."""

from collections.abc import Sequence
from pathlib import Path

import redis

from localservers.ports import free_port
from localservers.processes import ManagedProcess
from localservers.waiting import wait_until


class RedisServer(ManagedProcess):
    def __init__(self, directory: Path, port: int | None = None, *, options: Sequence[str] = ()):
        self.port = port or free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(directory), *options,
        ]  # fmt: skip
        super().__init__("redis-server", command, log_path=directory / f"redis-{self.port}.log")

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        super().start()
        probe = redis.Redis.from_url(self.url, socket_connect_timeout=0.2, socket_timeout=1)

        def answering() -> bool:
            if not self.running:
                raise self.fail("exited at start")
            return bool(probe.ping())

        wait_until(
            answering,
            timeout=10,
            what=f"redis-server on port {self.port} to answer PING",
            interval=0.05,
            ignoring=(redis.RedisError,),
        )

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=5)
