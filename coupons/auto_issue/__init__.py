"""Coupons issued by events (自动发券, SPEC section 28): on sign-up and after a paid order. An
event writes a task in its own transaction (an outbox: nothing is lost, nothing is slowed);
the scheduler issues each task exactly once through the issuing core and retries failures."""
