"""Free ports for servers of our own (localservers/ports.py): a block is free now, below the
kernel's ephemeral range, a port someone holds is never handed out inside a block, and a port
reserved by another process is not handed out while that process lives."""

import socket
import subprocess
import sys
from pathlib import Path

from localservers.ports import _reserve, free_port, free_port_block, port_free, port_open


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


def test_a_port_another_process_reserved_is_passed_over_until_that_process_ends():
    """Another suite picks ports at the same moment: a port it reserved is not ours even
    while nothing is bound to it yet (its server not started), and is free again once that
    process ends, whatever it left behind."""
    other = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from localservers.ports import free_port\n"
         "print(free_port(), flush=True); sys.stdin.read()"],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        theirs = int(other.stdout.readline())

        assert port_free(theirs)
        assert not _reserve([theirs])
    finally:
        other.stdin.close()
        other.wait(timeout=10)

    assert _reserve([theirs])


def test_ports_handed_out_in_one_process_are_all_different():
    ports = [free_port() for _ in range(50)]

    assert len(set(ports)) == 50
