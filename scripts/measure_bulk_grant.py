"""Wall and CPU time of a bulk grant (issue: 100,000 users in under 2 minutes on MariaDB, with
progress, exact and safe to re-run), through `manage.py grant_coupons` as an operator runs it,
with the production settings.

    .venv/bin/python scripts/measure_bulk_grant.py [--users 100000]

It creates (and drops afterwards) its own database `coupons_grant_<pid>` and that many users,
writes their usernames to a file, grants a template to them, checks that every user holds
exactly one coupon and the template's count says so, then runs the same grant again (nothing
issued twice). Prints the wall and CPU time of each run."""

import argparse
import io
import os
import secrets
import tempfile
import time
from pathlib import Path

from measurement_support import PORT_HELP, configure, own_database

DATABASE = f"coupons_grant_{os.getpid()}"
configure(DATABASE)
os.environ["COUPON_REDIS_PREFIX"] = f"grant-{os.getpid()}:"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--port", help=PORT_HELP)
    args = parser.parse_args()
    with own_database(DATABASE):
        try:
            run(args.users)
        finally:
            from django.db import connections

            connections.close_all()


def run(count: int) -> None:
    import django

    django.setup()
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from core import clock
    from coupons.models import CouponTemplate, UserCoupon
    from coupons.services import templates

    call_command("migrate", verbosity=0)
    User = get_user_model()
    User.objects.bulk_create(
        (User(username=f"shopper{number}", password="!") for number in range(count)),
        batch_size=5000,
    )
    operator = User.objects.create_superuser("operator", password=secrets.token_urlsafe(16))
    template = templates.coupon_template_publish(
        name="bulk grant",
        type="direct",
        value=500,
        total=count,
        per_user_limit=1,
        valid_from=clock.now(),
        valid_until=clock.now() + timedelta(days=30),
    )
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as users_file:
        users_file.write("".join(f"shopper{number}\n" for number in range(count)))
    for attempt in ("first run", "run again"):
        out = io.StringIO()
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        call_command(
            "grant_coupons", str(template.pk), "--users-file", users_file.name,
            "--reason", "bulk", "--as", operator.username, stdout=out,
        )  # fmt: skip
        wall = time.perf_counter() - wall_start
        cpu = time.process_time() - cpu_start
        progress = sum(1 for line in out.getvalue().splitlines() if f"/{count}" in line)
        holders = UserCoupon.objects.filter(template=template).values("user_id").distinct()
        coupons = UserCoupon.objects.filter(template=template).count()
        claimed = CouponTemplate.objects.get(pk=template.pk).claimed_count
        assert coupons == holders.count() == claimed == count, (coupons, claimed, count)
        print(
            f"{attempt}: {count} users in {wall:.2f} s wall, {cpu:.2f} s CPU, "
            f"{progress} progress lines; {coupons} coupons = claimed_count {claimed}; "
            f"{out.getvalue().strip().splitlines()[-1]}"
        )
    Path(users_file.name).unlink()


if __name__ == "__main__":
    main()
