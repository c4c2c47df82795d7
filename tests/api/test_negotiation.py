"""DRF's content negotiation, remembered per Accept header (api/negotiation.py, decision
1034): the same choice as DRF's each time, a refusal never remembered, and a bounded memory
whatever clients write."""

import pytest

from api import negotiation
from tests.support.clients import bearer_client
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_remembered():
    negotiation._kept.clear()
    yield
    negotiation._kept.clear()


@pytest.mark.parametrize(
    ("accept", "status", "content_type"),
    [
        ("*/*", 200, "application/json"),
        ("application/json", 200, "application/json"),
        ("text/html;q=0.9, application/json;q=0.8", 200, "application/json"),
        ("text/html", 406, "application/json"),
    ],
)
def test_the_same_accept_header_is_answered_the_same_the_first_time_and_after(
    accept, status, content_type
):
    client = bearer_client(UserFactory())
    answers = [client.get("/api/auth/me", HTTP_ACCEPT=accept) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [status] * 3
    assert {answer["Content-Type"] for answer in answers} == {content_type}
    assert len(negotiation._kept) == (1 if status == 200 else 0)


def test_a_format_asked_in_the_query_is_part_of_what_is_remembered():
    client = bearer_client(UserFactory())
    assert client.get("/api/auth/me").status_code == 200
    assert client.get("/api/auth/me?format=xml").status_code == 404  # DRF: no such renderer
    assert client.get("/api/auth/me").status_code == 200


def test_a_flood_of_new_accept_headers_keeps_at_most_the_bound():
    client = bearer_client(UserFactory())
    for index in range(negotiation.KEPT_CHOICES + 40):
        answer = client.get("/api/auth/me", HTTP_ACCEPT=f"application/json;q=0.{index:03d}")
        assert answer.status_code == 200
        assert len(negotiation._kept) <= negotiation.KEPT_CHOICES
