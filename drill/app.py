"""The app as shipped (config/serve.py, production settings) on a database the drill
names, with a redis-server of its own, and the drill's shoppers, templates and products."""

import json
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from localservers.ports import free_port
from localservers.processes import ManagedProcess
from localservers.redis_server import RedisServer

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# Claimed throughout (recovery is measured on it), sold out early, limited per user, and the
# one whose coupons the shoppers spend at checkout.
SEED_SCRIPT = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from rest_framework_simplejwt.tokens import AccessToken
from core import clock
from coupons.models import CouponTemplate
from orders.models import Product

User = get_user_model()
now = clock.now()
shape = dict(type="direct", value=100, min_amount=0, valid_from=now - timedelta(days=1),
             valid_until=now + timedelta(days=1))
templates = {
    "open": CouponTemplate.objects.create(name="drill open", total=10_000_000,
                                          per_user_limit=1_000_000, **shape),
    "scarce": CouponTemplate.objects.create(name="drill scarce", total=SCARCE_TOTAL,
                                            per_user_limit=1_000_000, **shape),
    "limited": CouponTemplate.objects.create(name="drill limited", total=10_000_000,
                                             per_user_limit=USER_LIMIT, **shape),
    "spend": CouponTemplate.objects.create(name="drill spend", total=10_000_000,
                                           per_user_limit=1_000_000, **shape),
}
products = Product.objects.bulk_create(
    [Product(name=f"drill {i}", price=1000, stock=STOCK) for i in range(PRODUCTS)]
)
User.objects.bulk_create([User(username=f"drill{i}", password="!") for i in range(USERS)])
users = User.objects.filter(username__startswith="drill").order_by("id")
print(json.dumps({
    "templates": {name: template.pk for name, template in templates.items()},
    "products": [product.pk for product in products],
    "stock": STOCK,
    "users": [[user.pk, str(AccessToken.for_user(user))] for user in users],
}))
"""


@dataclass(frozen=True)
class Seed:
    templates: dict[str, int]
    products: list[int]
    stock: int
    users: list[tuple[int, str]]  # (user id, access token)


class DrillApp:
    """The shipped server (config/serve.py) against `database_url`, its own redis-server."""

    def __init__(
        self,
        work_dir: Path,
        database_url: str,
        *,
        replica_url: str | None = None,
        workers: int = 2,
    ):
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        self.redis = RedisServer(work_dir / "redis")
        self.database_url = database_url
        self.replica_url = replica_url
        self.workers = workers
        self.port = free_port()
        self.secret_key = secrets.token_urlsafe(50)
        self.server: ManagedProcess | None = None
        self.scheduler: ManagedProcess | None = None

    def env(self) -> dict[str, str]:
        # Reads that may lag go to the reader port, as in a deployment (SPEC section 22).
        replica = {} if self.replica_url is None else {"DATABASE_REPLICA_URL": self.replica_url}
        return {
            **replica,
            "PATH": f"{BIN}:/usr/bin:/bin:/usr/sbin:/sbin",
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": self.secret_key,
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url,
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_COOKIES": "0",
            "LOG_LEVEL": "WARNING",
            # The drill measures the database, not the throttles: no shopper is limited.
            "THROTTLE_CLAIM": "1000000/min",
            "THROTTLE_CHECKOUT": "1000000/min",
            # A drill checkout's line is unique per key by its quantity (drill.load), up to
            # MAX_SEQUENCE / 4: the per-line cap must not refuse it (400 is not a fault's).
            "ORDER_LINE_MAX_QUANTITY": "999",
            "JWT_ACCESS_MINUTES": "240",
            "SERVER_WORKERS": str(self.workers),
        }

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [str(BIN / "python"), "manage.py", *args],
            cwd=REPO, env=self.env(), capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed: {result.stderr[-3000:]}")
        return result.stdout

    def prepare(
        self, *, users: int = 40, scarce_total: int = 100, user_limit: int = 8, stock: int = 10**6
    ) -> Seed:
        """The schema and the drill's rows, on the database the URL names (created empty)."""
        self.manage("migrate", "--noinput", "-v0")
        script = (
            SEED_SCRIPT.replace("SCARCE_TOTAL", str(scarce_total))
            .replace("USER_LIMIT", str(user_limit))
            .replace("STOCK", str(stock))
            .replace("PRODUCTS", "4")
            .replace("USERS", str(users))
        )
        facts = json.loads(self.manage("shell", "-c", script).strip().splitlines()[-1])
        return Seed(
            templates=facts["templates"],
            products=facts["products"],
            stock=facts["stock"],
            users=[(user_id, token) for user_id, token in facts["users"]],
        )

    def start(self) -> None:
        if not self.redis.running:
            self.redis.start()
        command = [str(BIN / "python"), "-m", "config.serve", "--bind", f"127.0.0.1:{self.port}"]
        self.server = ManagedProcess(
            "server", command, env=self.env(), log_path=self.work_dir / "server.log", cwd=REPO
        )
        self.server.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not self.server.running:
                raise self.server.fail("exited at start")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise self.server.fail("did not answer /healthz within 60 s")

    def start_scheduler(self) -> None:
        """The one-second watches (run_scheduler) beside the server, as scripts/serve and
        compose run them."""
        self.scheduler = ManagedProcess(
            "scheduler",
            [str(BIN / "python"), "manage.py", "run_scheduler"],
            env=self.env(),
            log_path=self.work_dir / "scheduler.log",
            cwd=REPO,
        )
        self.scheduler.start()

    def repoint(self, database_url: str) -> None:
        """Serve from another database (a promoted replica), with Redis emptied: the facts it
        held came from the old primary."""
        self.stop_server()
        self.redis.client().flushdb()
        self.database_url = database_url
        self.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.stop(timeout=40)
            self.server = None

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop(timeout=20)
            self.scheduler = None
        self.stop_server()
        self.redis.stop()

    def log_tail(self) -> str:
        return self.server.log_tail() if self.server else ""


def environment_database_url(url: str, database: str) -> str:
    """`url` (mysql://user@host:port/any) with its database replaced."""
    head, _, _ = url.rpartition("/")
    return f"{head}/{database}"
