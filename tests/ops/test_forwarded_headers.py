"""X-Forwarded-Proto counts only from a proxy in TRUSTED_PROXIES
(ops.middleware.ForwardedHeadersFromProxiesMiddleware); tests/deploy/test_nginx_forwarding.py
shows the same through the shipped nginx."""

import pytest
from django.test import Client

from tests.support.clients import bearer_client
from tests.support.factories import ProductFactory, UserFactory

pytestmark = pytest.mark.django_db


def next_link(client: Client, remote_addr: str) -> str:
    answer = client.get(
        "/api/products?page_size=1", REMOTE_ADDR=remote_addr, HTTP_X_FORWARDED_PROTO="https"
    )
    assert answer.status_code == 200
    return answer.json()["next"]


@pytest.mark.parametrize(
    ("trusted", "remote_addr", "scheme"),
    [
        (["10.0.0.5"], "10.0.0.5", "https"),
        (["10.0.0.0/24"], "10.0.0.77", "https"),
        (["10.0.0.0/24"], "10.0.1.1", "http"),
        (["fd00::/8"], "fd00::1", "https"),
        ([], "10.0.0.5", "http"),  # the default: nobody's headers
    ],
)
def test_the_forwarded_scheme_counts_only_from_a_trusted_proxy(
    settings, trusted, remote_addr, scheme
):
    ProductFactory.create_batch(2)
    settings.TRUSTED_PROXIES = trusted
    client = bearer_client(UserFactory())  # a new handler reads the setting

    # (The test client's port is 80 whatever the scheme: only the scheme is the point here.)
    assert next_link(client, remote_addr).split("://")[0] == scheme
