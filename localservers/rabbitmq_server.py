"""A RabbitMQ of our own: its own node name, ports and data directory, so that a test or a
drill may kill or restart the broker under a worker. Its data (durable queues and their
persistent messages) survives a restart, as a deployment's volume does. The shared RabbitMQ
is never touched this way."""

import os
import socket
from pathlib import Path

from localservers.ports import free_port
from localservers.processes import ManagedProcess
from localservers.waiting import wait_until

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"


class RabbitMQServer(ManagedProcess):
    def __init__(self, directory: Path):
        self.port = free_port()
        self.directory = directory
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}//"
        node = f"test{self.port}@localhost"
        environment = {
            **os.environ,
            "RABBITMQ_NODENAME": node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(directory / "log"),
            "RABBITMQ_PID_FILE": str(directory / "rabbitmq.pid"),
            "RABBITMQ_CONFIG_FILE": str(directory / "none"),  # no config: the defaults
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        }
        super().__init__(
            "rabbitmq-server",
            [SERVER],
            log_path=directory / "server.log",
            env=environment,
            cwd=directory,
        )

    def start(self, timeout: float = 60) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        super().start()

        def answering() -> bool:
            if not self.running:
                raise self.fail("exited at start")
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True

        wait_until(
            answering,
            timeout=timeout,
            what=f"rabbitmq-server on port {self.port} to accept connections",
            interval=0.2,
            ignoring=(OSError,),
        )
