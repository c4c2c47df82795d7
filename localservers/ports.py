"""Free ports on 127.0.0.1 for servers of our own."""

import os
import socket
from pathlib import Path


def free_port() -> int:
    """A port the kernel has just handed out and nothing holds (it may hand it out again
    later: start the server soon)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_open(port: int) -> bool:
    """Something listens on the port."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def free_port_block(size: int, *, also_free: int = 0) -> int:
    """The first port of `size` consecutive free ports (each one + `also_free` free too, for
    servers that also bind a second port at a fixed offset), below the kernel's ephemeral
    range. A server that binds some of its ports only later (a Galera node its state-transfer
    ports, when it rejoins) needs ports no client connection can take meanwhile: after a run
    with thousands of connections, any port inside that range may be a socket's local port
    or in TIME_WAIT. Blocks are tried from one chosen by the pid, wrapping around, so that
    concurrent runs seldom try the same one first."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    first = 20000 if low > 21000 else 10000
    step = max(size, 1)
    blocks = [base for base in range(first, low - step, step) if base + step + also_free < 65536]
    if not blocks:
        raise RuntimeError("no room for a block of ports below the ephemeral range")
    start_at = os.getpid() % len(blocks)
    for base in blocks[start_at:] + blocks[:start_at]:
        ports = range(base, base + size)
        if all(
            port_free(port) and (not also_free or port_free(port + also_free)) for port in ports
        ):
            return base
    raise RuntimeError(f"no {size} free ports in a row below the ephemeral range")
