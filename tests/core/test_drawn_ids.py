"""Ids drawn without a system call (core/drawn_ids.py): hex of the asked size, and distinct in
a forked worker, whose generator is seeded again."""

import os
import random
import re

from core.drawn_ids import drawn_hex


def test_an_id_is_the_asked_bits_in_lower_case_hex_zero_padded():
    assert all(re.fullmatch(r"[0-9a-f]{16}", drawn_hex()) for _ in range(1000))
    assert all(re.fullmatch(r"[0-9a-f]{32}", drawn_hex(128)) for _ in range(1000))
    assert len({drawn_hex() for _ in range(10_000)}) == 10_000


def test_a_forked_child_draws_other_ids_than_its_parent():
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its next draws, then out at once
        os.write(writing, "".join(drawn_hex() for _ in range(4)).encode())
        os._exit(0)
    os.close(writing)
    parents = "".join(drawn_hex() for _ in range(4))
    _, status = os.waitpid(child, 0)
    childs = os.read(reading, 1024).decode()
    os.close(reading)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(childs) == 64 and childs != parents


def test_a_seed_given_to_the_shared_generator_does_not_repeat_the_ids():
    random.seed(42)
    first = drawn_hex()
    random.seed(42)
    assert drawn_hex() != first
