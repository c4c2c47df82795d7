"""Django's MySQL backend with a connection check that costs no round trip (base.py)."""
