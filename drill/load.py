"""The drill's clients: claim storms over the templates, shoppers that claim a coupon, check
out with it (now and then twice at once, to try a double spend) and pay, and one shopper who
reads its list through the replica URL right after each of its claims (read-your-writes).
Every request but a third of the storms' claims carries an Idempotency-Key; an answer that
says nothing definite (503, no answer, the key still in progress) is retried with the same
key, and a share of the definite ones once more, to prove the replay. A claim without a key
(the claim's lean route, decision 1027) is sent once."""

import itertools
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from drill.app import Seed
from drill.client import Attempt, get_json, send
from drill.ledger import Ledger, ReadBack

RETRY_PAUSE = 0.5  # seconds between retries of an ambiguous answer
MAX_TRIES = 8  # so every retry lands well inside the key's 60 s lease (decision 0322)
REPLAY_SHARE = 0.15  # of definite answers, sent once more with the same key
MAX_SEQUENCE = 4 * 999  # checkouts per user (checkout_body encodes the number)
KEYLESS_EVERY = 3  # of a storm's claims, one in this many goes without an Idempotency-Key


@dataclass(frozen=True)
class Command:
    kind: str
    user_id: int
    token: str
    key: str
    path: str
    body: str = ""
    sends_key: bool = True


class Load:
    def __init__(
        self, port: int, seed: Seed, ledger: Ledger, *, storms: int = 4, shoppers: int = 2
    ):
        self.port, self.seed, self.ledger = port, seed, ledger
        self.random = random.Random(22)
        self.stopping = threading.Event()
        self.commands: list[Command] = []
        self.commands_lock = threading.Lock()
        self.sequences = {user_id: itertools.count() for user_id, _ in seed.users}
        self.failures: list[BaseException] = []
        # The last user reads back its own claims; nobody else claims as it.
        *users, self.reader = seed.users
        self.threads = (
            [
                threading.Thread(
                    target=self.guarded, args=(self.storm, users[i::storms]), daemon=True
                )
                for i in range(storms)
            ]
            + [
                # The shoppers' users are their own: one user's orders come from one thread.
                threading.Thread(
                    target=self.guarded, args=(self.shop, users[i::shoppers]), daemon=True
                )
                for i in range(shoppers)
            ]
            + [
                threading.Thread(
                    target=self.guarded, args=(self.read_back, [self.reader]), daemon=True
                )
            ]
        )

    def start(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def guarded(self, body: Callable, users: list[tuple[int, str]]) -> None:
        try:
            body(users)
        except BaseException as error:  # a bug in the drill itself: the run must fail
            self.failures.append(error)

    def run(self, command: Command, *, final_pass: bool = False) -> tuple[Attempt, dict]:
        """Send until a definite answer (or MAX_TRIES), then maybe once more."""
        if not final_pass and command.sends_key:
            with self.commands_lock:
                self.commands.append(command)
        for tries in itertools.count(1):
            attempt, payload = send(
                self.port, kind=command.kind, user_id=command.user_id, token=command.token,
                key=command.key, path=command.path, body=command.body, final_pass=final_pass,
                sends_key=command.sends_key,
            )  # fmt: skip
            self.ledger.add(attempt)
            if not command.sends_key:
                return attempt, payload  # nothing to retry it by
            if not attempt.ambiguous or tries >= MAX_TRIES or final_pass:
                break
            time.sleep(RETRY_PAUSE)
        if not attempt.ambiguous and not final_pass and self.random.random() < REPLAY_SHARE:
            replay, _ = send(
                self.port, kind=command.kind, user_id=command.user_id, token=command.token,
                key=command.key, path=command.path, body=command.body,
            )  # fmt: skip
            self.ledger.add(replay)
        return attempt, payload

    def command(self, kind: str, user: tuple[int, str], path: str, body: str = "") -> Command:
        return Command(kind, user[0], user[1], uuid.uuid4().hex, path, body)

    def claim(
        self, user: tuple[int, str], template: str, *, sends_key: bool = True
    ) -> tuple[Attempt, dict]:
        path = f"/api/coupons/{self.seed.templates[template]}/claim"
        command = Command("claim", user[0], user[1], uuid.uuid4().hex, path, sends_key=sends_key)
        return self.run(command)

    def storm(self, users: list[tuple[int, str]]) -> None:
        names = ["open", "open", "scarce", "limited"]
        for turn in itertools.count():
            if self.stopping.is_set():
                return
            keyed = turn % KEYLESS_EVERY != 0
            self.claim(users[turn % len(users)], names[turn % len(names)], sends_key=keyed)
            time.sleep(0.005)

    def read_back(self, users: list[tuple[int, str]]) -> None:
        """Claim, then read the list (GET /api/coupons, served from the replica URL): it must
        show every claim acknowledged so far (SPEC section 22: reads see the caller's own
        writes)."""
        (user,) = users
        template = self.seed.templates["open"]
        acknowledged = 0
        while not self.stopping.is_set():
            claimed, _ = self.claim(user, "open")
            acknowledged += claimed.ok
            if not claimed.ok:
                continue
            status, page = get_json(self.port, token=user[1], path="/api/coupons")
            if status != 200:
                continue  # the read was refused (a fault): nothing it could have missed
            held = [item["claimed_by_me"] for item in page["results"] if item["id"] == template]
            self.ledger.reads.append(ReadBack(user[0], acknowledged, held[0] if held else 0))
            time.sleep(0.05)

    def checkout_body(self, user_id: int, coupon_id: int) -> str | None:
        sequence = next(self.sequences[user_id])
        if sequence >= MAX_SEQUENCE:
            return None
        products = self.seed.products
        line = {"product_id": products[sequence % len(products)], "quantity": sequence // 4 + 1}
        return json.dumps({"items": [line], "coupon_id": coupon_id})

    def checkout(self, user: tuple[int, str], coupon_id: int) -> tuple[Attempt, dict] | None:
        body = self.checkout_body(user[0], coupon_id)
        if body is None:
            return None
        return self.run(self.command("checkout", user, "/api/orders", body))

    def shop(self, users: list[tuple[int, str]]) -> None:
        for turn in itertools.count():
            if self.stopping.is_set():
                return
            user = users[turn % len(users)]
            claimed, coupon = self.claim(user, "spend")
            if not claimed.ok:
                continue
            if turn % 4 == 0:  # two checkouts with one coupon at once: one may win
                results = self.both_at_once(user, coupon["id"])
            else:
                results = [self.checkout(user, coupon["id"])]
            for result in results:
                if result is not None and result[0].ok:
                    order = result[1]
                    body = json.dumps({"amount": order["pay_amount"]})
                    self.run(self.command("pay", user, f"/api/orders/{order['id']}/pay", body))

    def both_at_once(
        self, user: tuple[int, str], coupon_id: int
    ) -> list[tuple[Attempt, dict] | None]:
        results: list[tuple[Attempt, dict] | None] = []
        rival = threading.Thread(target=lambda: results.append(self.checkout(user, coupon_id)))
        rival.start()
        results.append(self.checkout(user, coupon_id))
        rival.join()
        return results

    def final_pass(self, share: float = 0.1, most: int = 300) -> int:
        """After recovery: a random subset of every key sent, once more each."""
        with self.commands_lock:
            commands = list(self.commands)
        chosen = self.random.sample(commands, min(most, max(1, int(len(commands) * share))))
        for command in chosen:
            self.run(command, final_pass=True)
        return len(chosen)
