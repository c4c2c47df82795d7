"""The failover drill (SPEC section 22, `make drill`): the app's real HTTP API under claim
storms, checkouts and pays with Idempotency-Keys while the database's writer is killed, a
client-side ledger of every answer, and the checks that ledger proves against the database
after recovery. `drill.control` is the negative control: an asynchronous replica promoted,
which the same checks must catch losing acknowledged claims. docs/operations.md tells how to
run and read it."""
