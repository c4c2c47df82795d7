import pytest


@pytest.fixture
def now(frozen_now):
    """The frozen instant every test of the order flow runs at."""
    return frozen_now.now()
