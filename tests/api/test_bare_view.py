"""GET /bench/bare (api/bare.py), the benchmark's ceiling row: DRF with nothing of ours, no
database and no authentication; routed only when BENCH_BARE_VIEW is on, so production (where
the environment does not set it) answers 404 like for any unknown path."""

import importlib
import warnings

import pytest
from django.test.utils import CaptureQueriesContext
from django.urls import clear_url_caches
from django.utils.deprecation import RemovedInDjango60Warning
from rest_framework.test import APIClient

import config.urls


@pytest.fixture
def urls_with(settings):
    """config.urls built again with BENCH_BARE_VIEW as given, and as configured afterwards."""

    def build(enabled: bool) -> None:
        settings.BENCH_BARE_VIEW = enabled
        with warnings.catch_warnings():  # the reload registers the id converter once more
            warnings.simplefilter("ignore", RemovedInDjango60Warning)
            importlib.reload(config.urls)
        clear_url_caches()

    yield build
    build(False)


def test_the_bare_view_is_not_routed_by_default(settings):
    assert settings.BENCH_BARE_VIEW is False

    response = APIClient().get("/bench/bare")

    assert response.status_code == 404


@pytest.mark.django_db
def test_with_the_setting_on_the_bare_view_answers_anyone_without_the_database(urls_with):
    from django.db import connection

    urls_with(True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")  # ignored: no authentication

    with CaptureQueriesContext(connection) as queries:
        response = client.get("/bench/bare")

    assert (response.status_code, response.json()) == (200, {"ok": True})
    assert queries.captured_queries == []
