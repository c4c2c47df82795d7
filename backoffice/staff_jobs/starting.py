"""Starting a staff job: its row, then (once that commits) its message to a worker. An import
or a grant on a template that has one waiting or running is refused at once (409)."""

from collections.abc import Sequence
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import translation

from backoffice.staff_jobs import tasks
from backoffice.staff_jobs.errors import StaffJobBusy
from backoffice.staff_jobs.models import StaffJob
from coupons.models import CouponTemplate

# The work that changes a template, one of each kind at a time per template.
ONE_AT_A_TIME = (StaffJob.Kind.CODES_IMPORT, StaffJob.Kind.GRANT_FILE)


def staff_job_start(
    *,
    kind: StaffJob.Kind,
    started_by,
    template: CouponTemplate | None = None,
    template_ids: Sequence[int] = (),
    options: dict[str, Any] | None = None,
    upload: UploadedFile | None = None,
    upload_of: StaffJob | None = None,
) -> StaffJob:
    """The job, queued for a worker in the language of the request that starts it. `upload`:
    the file sent; `upload_of`: an earlier job whose file this one works on (the import
    after its preview)."""
    busy_key = f"{kind}:{template.pk}" if template and kind in ONE_AT_A_TIME else None
    if busy_key and StaffJob.objects.filter(one_at_a_time=busy_key).exists():
        raise StaffJobBusy()
    job = StaffJob(
        kind=kind,
        started_by=started_by,
        template=template,
        template_ids=list(template_ids),
        one_at_a_time=busy_key,
        options={**(options or {}), "language": translation.get_language()},
    )
    if upload is not None:
        job.upload_name = (upload.name or "")[:200]
        job.upload.save(job.upload_name, upload, save=False)
    elif upload_of is not None:
        job.upload, job.upload_name = upload_of.upload.name, upload_of.upload_name
    try:
        with transaction.atomic():
            job.save()
    except IntegrityError as error:  # another start won the race for the template
        raise StaffJobBusy() from error
    # A broker that cannot be reached loses nothing: the job waits, and the periodic
    # resend (tasks.staff_jobs_resend) sends it again.
    transaction.on_commit(lambda: tasks.staff_job_run.delay(job.pk), robust=True)
    return job
