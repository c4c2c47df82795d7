"""Merchant codes as staff jobs: the preview (every row checked, nothing written) and the
import (all or nothing), both by coupons/services/merchant_codes.py, in a worker."""

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from backoffice.staff_actions import StaffAction, staff_audit
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.progress import JobRun
from coupons.services import merchant_codes


def _dataset(job: StaffJob):
    with job.upload.open("rb") as upload:
        content = upload.read()
    return merchant_codes.merchant_codes_read(name=job.upload_name, content=content)


def codes_preview(run: JobRun) -> None:
    job = run.job
    dataset = _dataset(job)
    run.advance(0, total=len(dataset))
    assert job.template_id is not None
    check = merchant_codes.merchant_codes_check(template_id=job.template_id, dataset=dataset)
    if check.importable:
        outcome = ngettext(
            "%(count)d code can be imported.", "%(count)d codes can be imported.", check.good
        ) % {"count": check.good}
    else:
        outcome = _("Nothing can be imported: correct the file and choose it again.")
    problems = check.messages()
    run.finish(
        outcome,
        done=len(dataset),
        counts={"rows": len(dataset), "good": check.good, "problems": len(check.problems)},
        problems=problems,
        problems_count=len(problems),
        options={**job.options, "importable": check.importable},
    )


def codes_import(run: JobRun) -> None:
    """The file imported whole; a run after one whose worker was killed first takes back the
    codes that one inserted (their count is the job's progress, which committed with them)."""
    job = run.job
    dataset = _dataset(job)
    run.note(total=len(dataset))
    assert job.template_id is not None

    def imported(count: int) -> None:
        outcome = ngettext(
            "%(count)d merchant code imported.", "%(count)d merchant codes imported.", count
        ) % {"count": count}
        run.finish(outcome, done=count, counts={"imported": count})

    merchant_codes.merchant_codes_import(
        template_id=job.template_id,
        dataset=dataset,
        file_name=job.upload_name,
        codes_only=bool(job.options.get("codes_only")),
        audit=staff_audit(job.started_by, StaffAction.CODES_IMPORT),
        inserted_before=job.done if run.resumed else 0,
        on_inserted=run.advance,
        on_imported=imported,
    )
