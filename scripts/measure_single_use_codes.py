"""Wall and CPU time to create single-use codes in bulk (SPEC section 18: 100,000 in under a
minute), through the service the admin API calls, on MariaDB with the production settings.

    .venv/bin/python scripts/measure_single_use_codes.py [--count 100000] [--runs 3]

It creates (and drops afterwards) its own database `coupons_codes_<pid>`. Each run creates
`count` codes for a fresh template, then checks that the codes are unique and of the
alphabet. Prints one line per run and the median."""

import argparse
import os
import re
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
DATABASE = f"coupons_codes_{os.getpid()}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
os.environ["DATABASE_URL"] = f"mysql://root@127.0.0.1:3306/{DATABASE}"
os.environ["COUPON_REDIS_PREFIX"] = f"codes-{os.getpid()}:"
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import MySQLdb

    admin = MySQLdb.connect(host="127.0.0.1", user="root")
    admin.cursor().execute(f"CREATE DATABASE {DATABASE}")
    try:
        run(args.count, args.runs)
    finally:
        from django.db import connections

        connections.close_all()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DATABASE}")


def run(count: int, runs: int) -> None:
    import django

    django.setup()
    from datetime import timedelta

    from django.core.management import call_command

    from core import clock
    from coupons.models.single_use_codes import SINGLE_USE_CODE_ALPHABET, SingleUseCode
    from coupons.services import codes, templates

    call_command("migrate", verbosity=0)
    form = re.compile(rf"^[{SINGLE_USE_CODE_ALPHABET}]{{10,}}$")
    walls = []
    for number in range(1, runs + 1):
        template = templates.coupon_template_publish(
            name=f"codes {number}",
            type="direct",
            value=500,
            total=count,
            valid_from=clock.now(),
            valid_until=clock.now() + timedelta(days=30),
        )
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        created = codes.single_use_codes_create(template_id=template.pk, count=count)
        wall = time.perf_counter() - wall_start
        cpu = time.process_time() - cpu_start
        made = list(SingleUseCode.objects.filter(template=template).values_list("code", flat=True))
        assert created == count == len(made) == len(set(made)), (created, len(made))
        assert all(form.match(code) for code in made)
        walls.append(wall)
        print(f"run {number}: {created} codes created in {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"median: {count} codes in {statistics.median(walls):.2f} s wall ({runs} runs)")


if __name__ == "__main__":
    main()
