"""Ports on 127.0.0.1 for servers of our own.

Every port handed out lies below the kernel's ephemeral range (no client connection's local
port lands there) and is reserved for the process that asked, by a lock on a file named for
it: suites running side by side each pick ports at once, and a port merely free when it was
picked may be bound by another suite's server before ours binds it. The lock lasts as long as
the process (the kernel drops it when the process ends), so a port is never handed out twice
by this machine's test runs while its first owner lives."""

import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import IO

RESERVATIONS = Path(tempfile.gettempdir()) / "localservers-ports"

# The lock files this process holds, by port: closing one would drop its reservation.
_reserved: dict[int, IO[bytes]] = {}


def free_port() -> int:
    """A port free now and reserved for this process (start the server on it; nothing else of
    ours will be handed it)."""
    return free_port_block(1)


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
    range, all reserved for this process. A server that binds some of its ports only later (a
    Galera node its state-transfer ports, when it rejoins) needs ports no client connection
    can take meanwhile: after a run with thousands of connections, any port inside that range
    may be a socket's local port or in TIME_WAIT. Blocks are tried from one chosen by the pid,
    wrapping around, so that concurrent runs seldom try the same one first."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    first = 20000 if low > 21000 else 10000
    step = max(size, 1)
    blocks = [base for base in range(first, low - step, step) if base + step + also_free < 65536]
    if not blocks:
        raise RuntimeError("no room for a block of ports below the ephemeral range")
    start_at = os.getpid() % len(blocks)
    for base in blocks[start_at:] + blocks[:start_at]:
        ports = list(range(base, base + size))
        if also_free:
            ports += [port + also_free for port in ports]
        if all(port not in _reserved and port_free(port) for port in ports) and _reserve(ports):
            return base
    raise RuntimeError(f"no {size} free ports in a row below the ephemeral range")


def _reserve(ports: list[int]) -> bool:
    """Lock every port's file, or none: False when another process holds one of them."""
    RESERVATIONS.mkdir(mode=0o777, exist_ok=True)
    taken: list[int] = []
    for port in ports:
        handle = (RESERVATIONS / str(port)).open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            for held in taken:
                _reserved.pop(held).close()
            return False
        _reserved[port] = handle
        taken.append(port)
    return True
