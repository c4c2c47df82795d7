"""What the test modules share: factories, clients, server helpers, waiting. Fixtures stay in
tests/conftest.py; no test module imports another test module or a conftest."""
