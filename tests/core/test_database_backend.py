"""A kept database connection is checked before a request's first statement without a round
trip (core/database_backend/base.py): its socket says whether the server closed it; a ping
only after it sat idle. Counted by the server: each session's own `Com_admin_commands` (pings)."""

import time

import pytest
from django.db import connections

from core.database_backend.base import closed_by_peer


@pytest.fixture
def kept():
    """A connection of the test database's own, as a worker keeps one between requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def next_request_statement(wrapper) -> int:
    """What a request's first statement does after Django's request-start bookkeeping (which
    asks for a new check): run one, return the session's connection id it ran on."""
    wrapper.health_check_done = False
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT CONNECTION_ID()")
        return cursor.fetchone()[0]


def pings_of(wrapper) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Com_admin_commands'")
        return int(cursor.fetchone()[1])


def kill(session_id: int) -> None:
    killer = connections.create_connection("default")
    try:
        with killer.cursor() as cursor:
            cursor.execute(f"KILL CONNECTION {int(session_id)}")
    finally:
        killer.close()


@pytest.mark.django_db
def test_a_busy_connection_is_used_without_a_ping(kept):
    before = pings_of(kept)
    first = next_request_statement(kept)
    second = next_request_statement(kept)
    assert first == second  # the same kept connection
    assert pings_of(kept) == before


@pytest.mark.django_db
def test_a_connection_idle_past_the_bound_is_pinged_once(kept, settings):
    settings.DATABASE_CONNECTION_IDLE_CHECK = 0.05
    before = pings_of(kept)
    time.sleep(0.1)
    next_request_statement(kept)
    assert pings_of(kept) == before + 1


@pytest.mark.django_db
def test_a_connection_the_server_closed_is_replaced_before_anything_is_sent(kept):
    session = next_request_statement(kept)
    assert not closed_by_peer(kept.connection.fileno())
    kill(session)
    deadline = time.monotonic() + 5
    while not closed_by_peer(kept.connection.fileno()):
        assert time.monotonic() < deadline, "the killed session's socket never said so"
        time.sleep(0.01)
    assert next_request_statement(kept) != session  # no error: a new connection took it


@pytest.mark.django_db
def test_without_the_check_the_dead_connection_fails_the_statement(kept):
    """The control: the same kill, the check off, and the statement fails."""
    kept.health_check_enabled = False
    session = next_request_statement(kept)
    kill(session)
    time.sleep(0.2)
    with pytest.raises(Exception) as failure:
        next_request_statement(kept)
    assert failure.value.args[0] in (2006, 2013)
