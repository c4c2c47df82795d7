"""Ids that must be distinct, not secret: a Redis lease, a sliding window's attempt, a request
id. Drawn from a generator of this module's own (seeded from the system at start and again in
a forked child, and out of reach of any `random.seed` elsewhere), not from os.urandom: each
urandom call is a system call that lets go of the GIL, and a request thread waits to take it
back behind its siblings (the claim's refusal drew three per request). 64 random bits make a
clash between two leases out at once a chance of about one in 10**19."""

import os
import random

_generator = random.Random()  # seeded from os.urandom
os.register_at_fork(after_in_child=_generator.seed)


def drawn_hex(bits: int = 64) -> str:
    """`bits` random bits as lower-case hex digits, zero-padded."""
    return f"{_generator.getrandbits(bits):0{bits // 4}x}"
