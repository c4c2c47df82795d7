"""Storage bounds shared by every app: a client value beyond them is a 400, never an overflow."""

MAX_BIGINT = 2**63 - 1  # signed BIGINT: what every backend (SQLite included) can store
MAX_INT_UNSIGNED = 2**32 - 1
