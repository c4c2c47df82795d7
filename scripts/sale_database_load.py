"""What the database sees per second during a flash sale, before and after SPEC section 15,
from per-request statement counts measured with scripts/measure_claim_statements.py.

    python3 scripts/sale_database_load.py [--winners 10000] [--losers 1000000] \\
        [--seconds 60] [--nodes 1 4 16] [--templates 1]

A sale of `winners` coupons and `losers` refused clicks (sold out, limit, window, throttled)
spread over `seconds`, served by `nodes` app nodes sharing one database and one Redis. The
per-request counts do not depend on the nodes (the facts live in the shared Redis); what
the nodes change is how fast the clicks can arrive, so the table also shows the load if
each node served its share at the same per-node rate."""

import argparse

AUTHENTICATION = 1  # GET /api/auth/me: the user's row
# Statements per request, measured (docs/measurements/2026-11-30-claim-hot-path.md).
BEFORE = {"winner": 8, "loser": 2}
AFTER = {"winner": 5, "loser": 1}
# After: cached terms are re-read once per lease, plus the claims arriving during that read.
TERMS_LEASE_SECONDS = 5.0
FACTS_READ_SECONDS = 0.001


def per_second(counts: dict[str, int], *, winners: int, losers: int, seconds: float) -> float:
    return (winners * counts["winner"] + losers * counts["loser"]) / seconds


def refresh_per_second(*, clicks_per_second: float, templates: int) -> float:
    """Terms refresh: per template and lease, the claims that miss while one read runs
    (each then sends the facts query)."""
    missing_per_refresh = max(1.0, clicks_per_second / templates * FACTS_READ_SECONDS)
    return templates * missing_per_refresh / TERMS_LEASE_SECONDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--winners", type=int, default=10_000)
    parser.add_argument("--losers", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--templates", type=int, default=1)
    args = parser.parse_args()

    clicks = (args.winners + args.losers) / args.seconds
    print(
        f"sale: {args.winners:,} winners, {args.losers:,} refused clicks in {args.seconds:g} s"
        f" = {clicks:,.0f} claims/s, {args.templates} template(s)\n"
    )
    print(f"{'nodes':>5} {'claims/s':>10} {'before stmt/s':>14} {'after stmt/s':>13}"
          f" {'beyond auth: before':>20} {'after':>7}")  # fmt: skip
    for nodes in args.nodes:
        # The same sale arriving `nodes` times faster (each node at the one-node rate).
        seconds = args.seconds / nodes
        rate = clicks * nodes
        before = per_second(BEFORE, winners=args.winners, losers=args.losers, seconds=seconds)
        refresh = refresh_per_second(clicks_per_second=rate, templates=args.templates)
        after = per_second(AFTER, winners=args.winners, losers=args.losers, seconds=seconds)
        after += refresh
        auth = (args.winners + args.losers) / seconds * AUTHENTICATION
        print(
            f"{nodes:>5} {rate:>10,.0f} {before:>14,.0f} {after:>13,.0f}"
            f" {before - auth:>20,.0f} {after - auth:>7,.0f}"
        )


if __name__ == "__main__":
    main()
