"""A body that is not streamed goes to the server in one part, and the response is still
closed (api/wsgi_body.py, decision 1034)."""

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from django.http import HttpResponse, StreamingHttpResponse

from api.wsgi_body import body_in_one_part


@pytest.fixture(autouse=True)
def no_database_connection_closed():
    """This test opens no connection: Django's own receiver (which would ask the database
    whether to close one) is left out while it runs."""
    request_finished.disconnect(close_old_connections)
    yield
    request_finished.connect(close_old_connections)


def finished_signals() -> tuple[list, object]:
    """A list that gains an item each time request_finished is sent, and its receiver."""
    sent: list = []

    def receiver(**kwargs) -> None:
        sent.append(1)

    request_finished.connect(receiver, weak=False)
    return sent, receiver


def test_a_plain_body_is_one_part_and_its_response_closed():
    sent, receiver = finished_signals()
    try:
        body = body_in_one_part(HttpResponse(b'{"code":"sold_out"}', status=409))
    finally:
        request_finished.disconnect(receiver)
    assert body == [b'{"code":"sold_out"}']
    assert sent == [1]


def test_a_streamed_body_goes_as_it_is_and_is_left_to_the_server_to_close():
    sent, receiver = finished_signals()
    streamed = StreamingHttpResponse(iter([b"a", b"b"]))
    try:
        body = body_in_one_part(streamed)
    finally:
        request_finished.disconnect(receiver)
    assert body is streamed
    assert sent == []
    assert b"".join(body) == b"ab"
