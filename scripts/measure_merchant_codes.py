"""Wall and CPU time to import a merchant's single-use codes (SPEC section 26): a CSV read,
checked (the preview) and imported through the service the admin and the API call, on
MariaDB with the production settings.

    .venv/bin/python scripts/measure_merchant_codes.py [--count 100000] [--runs 3]

It creates (and drops afterwards) its own database `coupons_merchant_<pid>`. The file is
built in memory (the size limit of a request body does not apply to this measurement). Each
run imports `count` codes into a fresh template and checks that they are all there. Prints
one line per run and the median."""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
DATABASE = f"coupons_merchant_{os.getpid()}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
os.environ["DATABASE_URL"] = f"mysql://root@127.0.0.1:3306/{DATABASE}"
os.environ["COUPON_REDIS_PREFIX"] = f"merchant-{os.getpid()}:"
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(60))
os.environ["REQUEST_BODY_MAX_BYTES"] = str(64 * 1024 * 1024)  # the file is not a request here


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
    from coupons.models.single_use_codes import SingleUseCode
    from coupons.services import merchant_codes, templates

    call_command("migrate", verbosity=0)
    walls = []
    for number in range(1, runs + 1):
        template = templates.coupon_template_publish(
            name=f"merchant {number}",
            type="direct",
            value=500,
            total=count,
            valid_from=clock.now(),
            valid_until=clock.now() + timedelta(days=30),
        )
        lines = "\n".join(["code", *(f"M{number}-{n:010d}" for n in range(count))])
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        dataset = merchant_codes.merchant_codes_read(name="codes.csv", content=lines.encode())
        read = time.perf_counter() - wall_start
        check = merchant_codes.merchant_codes_check(template_id=template.pk, dataset=dataset)
        checked = time.perf_counter() - wall_start - read
        imported = merchant_codes.merchant_codes_import(
            template_id=template.pk, dataset=dataset, file_name="codes.csv"
        )
        wall = time.perf_counter() - wall_start
        cpu = time.process_time() - cpu_start
        assert check.importable and imported == count
        assert SingleUseCode.objects.filter(template=template).count() == count
        walls.append(wall)
        print(
            f"run {number}: {count} codes: read {read:.2f} s, preview {checked:.2f} s, "
            f"all (read, preview, import) {wall:.2f} s wall, {cpu:.2f} s CPU"
        )
    print(f"median: {count} codes in {statistics.median(walls):.2f} s wall ({runs} runs)")


if __name__ == "__main__":
    main()
