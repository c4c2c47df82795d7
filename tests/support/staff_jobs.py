"""Staff jobs in the tests: the job a page started, run as a worker runs it, and its file."""

import re

from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.running import staff_job_run

JOB_PAGE = re.compile(r"/admin/staff_jobs/staffjob/(\d+)/change/$")


def job_started_by(answer) -> StaffJob:
    """The job a page started, as its redirect names it (not run yet: a test's transaction
    never commits, so its message is never sent)."""
    assert answer.status_code == 302, answer
    match = JOB_PAGE.search(answer["Location"])
    assert match, answer["Location"]
    return StaffJob.objects.get(pk=int(match.group(1)))


def finished_job(answer) -> StaffJob:
    """The job a page started, run to its end as a worker runs it."""
    job = job_started_by(answer)
    staff_job_run(job.pk)
    job.refresh_from_db()
    return job


def job_file(client, job: StaffJob) -> bytes:
    """The job's result file, downloaded from its page as the staff member would."""
    answer = client.get(f"/admin/staff_jobs/staffjob/{job.pk}/download/")
    assert answer.status_code == 200, answer
    return b"".join(answer.streaming_content)


def records_csv(client, template_id: int, **headers) -> bytes:
    """A template's claims and uses as CSV, as the template page's export gives them: a job
    started, run, and its file downloaded."""
    url = f"/admin/coupons/coupontemplate/{template_id}/records/export/"
    job = finished_job(client.post(url, **headers))
    assert job.state == "succeeded", (job.outcome, job.problems)
    return job_file(client, job)
