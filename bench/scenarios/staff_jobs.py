"""Long staff work (SPEC section 34): a merchant's file of random codes uploaded to the admin's
import page, previewed and imported, and a grant to the users a CSV lists, each at the size
the spec names (100,000 in a full run). Each job runs as a worker runs it (staff_job_run),
here in the bench process against the bench's database, inside the request that starts it
(the task queue set to run what is sent at once): the seconds are the page's upload and the
job's whole work."""

import io
import secrets
import time

from bench.harness import Harness
from bench.progress import log
from bench.results import StaffJobRow, StaffJobs

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 12


def run(harness: Harness) -> StaffJobs:
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client, override_settings

    from bench import seed
    from config.celery import app
    from coupons.models import UserCoupon
    from coupons.models.single_use_codes import SingleUseCode

    count = harness.sizes.staff_job_rows
    staff = get_user_model().objects.create_superuser("bench-staff", password=None)
    client = Client()
    client.force_login(staff)
    codes_template, grant_template = seed.create_templates(
        "staff-jobs", 2, total=2 * count, per_user_limit=1
    )
    app.conf.task_always_eager = True
    rows: list[StaffJobRow] = []

    def timed(name: str, post, wanted: int, made) -> StaffJobRow:
        started = time.monotonic()
        job = job_of(post())
        row = StaffJobRow(
            name=name,
            rows=wanted,
            seconds=round(time.monotonic() - started, 2),
            state=job.state,
            outcome=job.outcome,
            made=made(),
        )
        log(f"[staff jobs {name}] {row.seconds} s, {row.state}: {row.outcome}")
        rows.append(row)
        return row

    with override_settings(MEDIA_ROOT=harness.workdir / "media"):
        codes = codes_xlsx(count)
        log(f"[staff jobs] {count:,} codes in an XLSX of {len(codes):,} bytes")
        import_page = f"/admin/coupons/coupontemplate/{codes_template}/codes/import/"
        preview_job = []

        def preview():
            answer = client.post(
                import_page, {"file": SimpleUploadedFile("codes.xlsx", codes), "reach": "keep"}
            )
            preview_job.append(job_of(answer).pk)
            return answer

        def imported():
            return SingleUseCode.objects.filter(template_id=codes_template).count()

        timed("codes preview", preview, count, lambda: 0)
        timed(
            "codes import",
            lambda: client.post(import_page, {"preview": preview_job[0]}),
            count,
            imported,
        )
        users = get_user_model().objects.bulk_create(
            (get_user_model()(username=f"bench-grant-{n}") for n in range(count)),
            batch_size=5_000,
        )
        names = "\n".join(["user", *(user.username for user in users)]).encode()
        log(f"[staff jobs] {count:,} users in a CSV of {len(names):,} bytes")
        grant_page = f"/admin/coupons/coupontemplate/{grant_template}/grant/file/"
        timed(
            "grant from a file",
            lambda: client.post(
                grant_page, {"file": SimpleUploadedFile("users.csv", names), "reason": "bench"}
            ),
            count,
            lambda: UserCoupon.objects.filter(template_id=grant_template).count(),
        )
    app.conf.task_always_eager = False
    return StaffJobs(codes_file_bytes=len(codes), users_file_bytes=len(names), rows=tuple(rows))


def codes_xlsx(count: int) -> bytes:
    """`count` random codes as a merchant sends them: one column, a header naming it."""
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet()
    sheet.append(["券码"])
    for _ in range(count):
        sheet.append(["".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def job_of(answer):
    from backoffice.staff_jobs.models import StaffJob

    assert answer.status_code == 302, answer.status_code
    job_id = int(answer["Location"].rstrip("/").split("/")[-2])
    return StaffJob.objects.get(pk=job_id)
