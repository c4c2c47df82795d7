"""The staff jobs' Celery tasks (decision 1025): thin, each calling running.py."""

from celery import shared_task

from backoffice.staff_jobs import running


@shared_task(name="staff_jobs.run", bind=True)
def staff_job_run(self, job_id: int) -> str:
    """Run one job. Redelivered (acks_late: its worker died before it finished), the job's
    last run is known lost and this one takes it over at once."""
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return running.staff_job_run(job_id, redelivered=redelivered)


@shared_task(name="staff_jobs.resend_lost")
def staff_jobs_resend_lost() -> str | None:
    return running.staff_jobs_lost(lambda job_id: staff_job_run.delay(job_id))


@shared_task(name="staff_jobs.forget_files")
def staff_job_files_forget() -> str | None:
    return running.staff_job_files_forget()
