"""Free ports for servers of our own (localservers/ports.py): a block is free now, below the
kernel's ephemeral range, and a port someone holds is never handed out inside a block."""

import socket
from pathlib import Path

from localservers.ports import free_port, free_port_block, port_free, port_open


def ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_a_block_is_free_and_below_the_ephemeral_range():
    first = free_port_block(40)

    assert first + 40 <= ephemeral_low()
    assert all(port_free(port) for port in range(first, first + 40))


def test_a_block_with_a_second_port_each_has_both_free():
    first = free_port_block(3, also_free=10000)

    assert all(port_free(port) and port_free(port + 10000) for port in range(first, first + 3))


def test_a_held_port_is_neither_free_nor_inside_the_next_block():
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port_block(8)))
        held.listen(1)
        port = held.getsockname()[1]

        assert not port_free(port)
        assert port_open(port)
        first = free_port_block(8)
        assert not first <= port < first + 8


def test_a_free_port_can_be_bound():
    port = free_port()

    assert port_free(port)
    assert not port_open(port)
