"""The demo's accounts (`make run`, coupons/management/commands/seed_demo.py): their password
is published in the README (SPEC section 19), and the API docs' login example uses it, so the
example works against the demo."""

DEMO_PASSWORD = "demo-pass-123"
DEMO_USERS = [("admin", True), ("alice", False), ("bob", False)]  # (username, staff)
