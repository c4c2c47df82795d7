"""What the ledger proves against the database after recovery (SPEC section 22). Each check
returns a Check: passed or not, and a line that says what was counted. The database is read
directly (MySQLdb, the app's table names), not through the app."""

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from drill.client import Attempt
from drill.ledger import HEAL_LIMIT, RECOVERY_LIMIT, Ledger, explained, faults_named

CLAIM_PATH = re.compile(r"^/api/coupons/(\d+)/claim$")
PAY_PATH = re.compile(r"^/api/orders/(\d+)/pay$")


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def rows(connection, sql: str, params: Iterable = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, tuple(params))
        return list(cursor.fetchall())


def in_list(values: Iterable[int]) -> str:
    return ",".join(str(int(value)) for value in values) or "NULL"


def claim_template(attempt: Attempt) -> int:
    match = CLAIM_PATH.match(attempt.path)
    assert match, attempt.path
    return int(match.group(1))


def checkout_signature(user_id: int, body: str) -> tuple[int, int, int]:
    """A drill checkout has one line whose (product, quantity) no other key of the user sends,
    so an order names the key that made it."""
    (line,) = json.loads(body)["items"]
    return (user_id, int(line["product_id"]), int(line["quantity"]))


def by_key(attempts: list[Attempt], kind: str) -> dict[tuple[int, str], list[Attempt]]:
    keys: dict[tuple[int, str], list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        if attempt.kind == kind:
            keys[(attempt.user_id, attempt.key)].append(attempt)
    return keys


def claims_have_rows(connection, attempts: list[Attempt]) -> Check:
    """Each acknowledged coupon is a row of its user and template, and no two keys were told
    the same coupon (a promoted replica that lacks rows hands their ids out again)."""
    acked: dict[int, set[tuple[int, int, str]]] = defaultdict(set)
    for attempt in attempts:
        if attempt.kind == "claim" and attempt.ok and attempt.resource_id is not None:
            acked[attempt.resource_id].add((attempt.user_id, claim_template(attempt), attempt.key))
    found = {
        coupon_id: (user_id, template_id)
        for coupon_id, user_id, template_id in rows(
            connection,
            f"SELECT id, user_id, template_id FROM user_coupons WHERE id IN ({in_list(acked)})",
        )
    }
    lost = sorted(
        {
            coupon
            for coupon, owners in acked.items()
            for owner in owners
            if found.get(coupon) != owner[:2] or len(owners) > 1
        }
    )
    told = sum(len(owners) for owners in acked.values())
    return Check(
        "every 201 claim has its row",
        not lost,
        f"{told} acknowledged, {len(lost)} without their row"
        + (f" (e.g. coupon {lost[:5]})" if lost else ""),
    )


def counts_and_limits(connection, templates: list[int]) -> list[Check]:
    per_user: dict[int, int] = defaultdict(int)
    for template, most in rows(
        connection,
        "SELECT template_id, MAX(n) FROM (SELECT template_id, COUNT(*) AS n FROM user_coupons"
        f" WHERE template_id IN ({in_list(templates)}) GROUP BY template_id, user_id) counts"
        " GROUP BY template_id",
    ):
        per_user[template] = most
    facts = [
        (template, total, claimed, limit, count, per_user[template])
        for template, total, claimed, limit, count in rows(
            connection,
            "SELECT t.id, t.total, t.claimed_count, t.per_user_limit,"
            " (SELECT COUNT(*) FROM user_coupons c WHERE c.template_id = t.id)"
            f" FROM coupon_templates t WHERE t.id IN ({in_list(templates)})",
        )
    ]
    counts = [f"{t}: {n} rows, claimed {c}, total {total}" for t, total, c, _, n, _ in facts]
    over = [f"template {t}: {most} > {limit}" for t, _, _, limit, _, most in facts if most > limit]
    return [
        Check(
            "rows == claimed_count <= total",
            len(facts) == len(templates) and all(n == c <= total for _, total, c, _, n, _ in facts),
            "; ".join(counts),
        ),
        Check(
            "nobody over a per-user limit",
            not over,
            "; ".join(over) or f"highest per user within each limit ({len(facts)} templates)",
        ),
    ]


def coupons_once(connection, templates: list[int], products: list[int], stock: int) -> Check:
    twice = rows(
        connection,
        "SELECT coupon_id FROM orders WHERE coupon_id IS NOT NULL AND status <> 'cancelled'"
        " GROUP BY coupon_id HAVING COUNT(*) > 1",
    )
    unmarked = rows(
        connection,
        "SELECT o.id FROM orders o JOIN user_coupons c ON c.id = o.coupon_id"
        " WHERE o.status <> 'cancelled' AND c.status <> 'used'",
    )
    orphans = rows(
        connection,
        "SELECT c.id FROM user_coupons c WHERE c.status = 'used'"
        f" AND c.template_id IN ({in_list(templates)}) AND NOT EXISTS (SELECT 1 FROM orders o"
        " WHERE o.coupon_id = c.id AND o.status <> 'cancelled')",
    )
    stock_off = rows(
        connection,
        f"SELECT p.id FROM products p WHERE p.id IN ({in_list(products)}) AND p.stock + (SELECT"
        " COALESCE(SUM(i.quantity), 0) FROM order_items i JOIN orders o ON o.id = i.order_id"
        " WHERE i.product_id = p.id AND o.status <> 'cancelled') <> %s",
        [stock],
    )
    (orders,) = rows(connection, "SELECT COUNT(*) FROM orders")[0]
    problems = [
        (twice, "coupons on two live orders"),
        (unmarked, "live orders whose coupon is not used"),
        (orphans, "used coupons without a live order"),
        (stock_off, "products whose stock and orders disagree"),
    ]
    found = [f"{len(ids)} {what}" for ids, what in problems if ids]
    return Check(
        "no coupon used twice",
        not found,
        "; ".join(found) or f"{orders} orders, each coupon on at most one, stock balanced",
    )


def keys_one_effect(connection, attempts: list[Attempt]) -> Check:
    problems: list[str] = []
    retried = 0
    for kind in ("claim", "checkout", "pay"):
        for key, tries in by_key(attempts, kind).items():
            retried += len(tries) > 1
            ids = {attempt.resource_id for attempt in tries if attempt.ok}
            definite = {
                (attempt.status, attempt.code, attempt.resource_id)
                for attempt in tries
                if not attempt.ambiguous
            }
            if len(ids) > 1 or len(definite) > 1:
                problems.append(f"{kind} key {key[1]}: answers {sorted(definite, key=str)}")
    problems += claim_effects(connection, attempts) + checkout_effects(connection, attempts)
    problems += pay_effects(connection, attempts)
    return Check(
        "a retried key has exactly one effect",
        not problems,
        "; ".join(problems[:5]) or f"{retried} keys sent more than once, each one effect",
    )


def claim_effects(connection, attempts: list[Attempt]) -> list[str]:
    """Per user and template, rows <= the keys that may have made one (answered 201, or
    without a definite answer): a key's second effect would be a row too many."""
    may: Counter[tuple[int, int]] = Counter()
    story: dict[tuple[int, int], list[str]] = defaultdict(list)
    for (user_id, key), tries in by_key(attempts, "claim").items():
        if any(attempt.ok or attempt.ambiguous for attempt in tries):
            may[(user_id, claim_template(tries[0]))] += 1
        if any(attempt.ambiguous for attempt in tries) and any(attempt.ok for attempt in tries):
            story[(user_id, claim_template(tries[0]))].append(f"key {key}: {answers(tries)}")
    templates = {template for _, template in may}
    found = rows(
        connection,
        "SELECT user_id, template_id, COUNT(*) FROM user_coupons"
        f" WHERE template_id IN ({in_list(templates)}) GROUP BY user_id, template_id",
    )
    return [
        f"user {user} template {template}: {count} rows from {may[(user, template)]} keys"
        + (f" ({'; '.join(story[(user, template)][:3])})" if story[(user, template)] else "")
        for user, template, count in found
        if count > may[(user, template)]
    ]


def answers(tries: list[Attempt]) -> str:
    """A key's answers in order, e.g. "503, 409 request_in_progress x7, final 201"."""
    words: list[str] = []
    for attempt in sorted(tries, key=lambda attempt: attempt.started):
        word = ("final " if attempt.final_pass else "") + (
            "no answer" if attempt.status == 0 else f"{attempt.status} {attempt.code or ''}"
        ).strip()
        if words and words[-1].split(" x")[0] == word:
            count = int(words[-1].split(" x")[1]) + 1 if " x" in words[-1] else 2
            words[-1] = f"{word} x{count}"
        else:
            words.append(word)
    return ", ".join(words)


def checkout_effects(connection, attempts: list[Attempt]) -> list[str]:
    """Each order names its key (checkout_signature): no key made two orders, none made one
    after a definite refusal, and every 201 order is there."""
    made: Counter[tuple[int, int, int]] = Counter()
    order_of: dict[int, tuple[int, int, int]] = {}
    for order_id, user_id, product_id, quantity in rows(
        connection,
        "SELECT o.id, o.user_id, i.product_id, i.quantity FROM orders o"
        " JOIN order_items i ON i.order_id = o.id",
    ):
        made[(user_id, product_id, quantity)] += 1
        order_of[order_id] = (user_id, product_id, quantity)
    problems = []
    for (user_id, key), tries in by_key(attempts, "checkout").items():
        signature = checkout_signature(user_id, tries[0].body)
        might = any(attempt.ok or attempt.ambiguous for attempt in tries)
        if made[signature] > (1 if might else 0):
            problems.append(f"checkout key {key}: {made[signature]} orders")
        for attempt in tries:
            if attempt.ok and order_of.get(attempt.resource_id or 0) != signature:
                problems.append(f"checkout key {key}: order {attempt.resource_id} missing")
    return problems


def pay_effects(connection, attempts: list[Attempt]) -> list[str]:
    paid = {
        int(PAY_PATH.match(attempt.path).group(1))  # type: ignore[union-attr]
        for attempt in attempts
        if attempt.kind == "pay" and attempt.ok
    }
    found = {
        order_id
        for (order_id,) in rows(
            connection, f"SELECT id FROM orders WHERE id IN ({in_list(paid)}) AND status = 'paid'"
        )
    }
    return [f"order {order_id} answered paid, not paid" for order_id in sorted(paid - found)]


def answers_explained(attempts: list[Attempt]) -> Check:
    bad = Counter(
        ("no answer" if a.status == 0 else f"{a.status} {a.code or ''}".strip(), a.kind)
        for a in attempts
        if not explained(a)
    )
    return Check(
        "503 with Retry-After, never 500",
        not bad,
        ", ".join(f"{n} x {kind} {label}" for (label, kind), n in bad.items())
        or f"{sum(a.status == 503 for a in attempts)} answers 503, each with Retry-After",
    )


def recovery(ledger: Ledger) -> Check:
    """Each fault against its own promise: RECOVERY_LIMIT for one node killed, frozen or
    thawed, HEAL_LIMIT for two nodes at once or all three."""
    times = [kill.recovered_in for kill in ledger.kills]
    slow = [k for k in ledger.kills if k.recovered_in is None or k.recovered_in > k.bound]
    known = [t for t in times if t is not None]
    faults = Counter(kill.fault for kill in ledger.kills)
    worst = {
        fault: max((k.recovered_in or float("inf")) for k in ledger.kills if k.fault == fault)
        for fault in faults
    }
    detail = ", ".join(
        f"{faults[fault]} {faults_named(fault)} max {worst[fault]:.2f} s" for fault in faults
    )
    return Check(
        f"claims within {RECOVERY_LIMIT:g} s of each fault, {HEAL_LIMIT:g} s of a double or all",
        bool(times) and not slow,
        detail if known else "no fault recovered",
    )


def reads_see_writes(ledger: Ledger) -> Check:
    """Every list read through the replica URL showed the claims its shopper had been told
    of before it (SPEC section 22)."""
    missed = [read for read in ledger.reads if read.listed < read.acknowledged]
    return Check(
        "reads through the replica see the caller's writes",
        bool(ledger.reads) and not missed,
        f"{len(ledger.reads)} reads after a claim, {len(missed)} missing one"
        + (f" (e.g. {missed[0].listed} listed of {missed[0].acknowledged})" if missed else ""),
    )


# A writer leaves a node only for a kill or a freeze of that node seen this recently (the
# signal comes before HAProxy's check marks it down), for any fault of another node (its
# eviction or its rejoin after a thaw reconfigures the cluster, and a healthy node may be out
# of the primary component for a moment), or returns to the writer node. A node's own thaw
# does not explain a move away from it: a thawed node that takes the writes from its stale
# state and loses them again is what this check is for.
MOVE_AFTER_FAULT = 15.0


def writer_moves_follow_faults(ledger: Ledger, *, writer_node: int) -> Check:
    """No writer moves without a fault: each move away from a node follows a kill or freeze
    of that node, or a fault of another node; moves back to the writer node are its return
    after a rejoin."""
    unexplained = [
        move
        for move in ledger.moves
        if move.to_node != writer_node
        and not any(
            0 <= move.at - kill.at <= MOVE_AFTER_FAULT
            and (
                kill.node != f"node{move.from_node}"  # the cluster reconfigured around it
                or kill.fault in ("kill", "freeze")
            )
            for kill in ledger.kills
        )
    ]
    shown = ", ".join(f"node{m.from_node} -> node{m.to_node}" for m in unexplained[:5])
    return Check(
        "no writer moves without a fault",
        not unexplained,
        f"{len(ledger.moves)} moves, {len(unexplained)} without a fault"
        + (f": {shown}" if shown else ""),
    )


def all_checks(
    connection, ledger: Ledger, *, templates: list[int], products: list[int], stock: int
) -> list[Check]:
    attempts = ledger.snapshot()
    return [
        claims_have_rows(connection, attempts),
        *counts_and_limits(connection, templates),
        coupons_once(connection, templates, products, stock),
        keys_one_effect(connection, attempts),
        answers_explained(attempts),
    ]
