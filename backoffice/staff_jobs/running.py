"""How a worker runs a staff job (decision 1025): it takes the job (the next attempt number),
does the job's work in the staff member's language, and ends it. A job is taken when it waits,
or when it runs but its last run is lost: the message came again after its worker died (the
broker's redelivery), or nothing was heard of it for STALE_SECONDS. A run that finds a later
one took its job stops writing (progress.JobSuperseded): a job never runs twice at once."""

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext as _

from backoffice.staff_jobs import code_import, exports, user_grant
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.progress import JobCancelled, JobRun, JobSuperseded
from core import clock
from core.domain_errors import DomainError

logger = logging.getLogger(__name__)

WORK: dict[str, Callable[[JobRun], None]] = {
    StaffJob.Kind.CODES_PREVIEW: code_import.codes_preview,
    StaffJob.Kind.CODES_IMPORT: code_import.codes_import,
    StaffJob.Kind.GRANT_FILE: user_grant.grant_file,
    StaffJob.Kind.TEMPLATES_EXPORT: exports.templates_export,
    StaffJob.Kind.CODES_EXPORT: exports.codes_export,
    StaffJob.Kind.RECORDS_EXPORT: exports.records_export,
}
# Work undone whole when it fails or is cancelled: its progress goes back to nothing.
ALL_OR_NOTHING = (StaffJob.Kind.CODES_IMPORT,)


def stale_before():
    return clock.now() - timedelta(seconds=settings.STAFF_JOB_STALE_SECONDS)


def staff_job_run(job_id: int, *, redelivered: bool = False) -> str:
    """Run the job if it is this message's to run; a line for the worker's log."""
    run = _taken(job_id, redelivered=redelivered)
    if run is None:
        return f"staff job {job_id}: not to run"
    with translation.override(run.job.options.get("language")):
        try:
            WORK[run.job.kind](run)
        except JobSuperseded:
            return f"staff job {job_id}: taken by a later run"
        except JobCancelled:
            _end(run, StaffJob.State.CANCELLED, _("Cancelled; nothing more was done."))
        except DomainError as error:
            problems = [str(p) for field in (error.fields or {}).values() for p in field]
            _end(run, StaffJob.State.FAILED, str(error.detail), problems)
        except Exception:
            logger.exception("staff job %s failed", job_id)
            message = _("Failed on an unexpected error; the log has the details.")
            _end(run, StaffJob.State.FAILED, message)
    return f"staff job {job_id}: {run.job.state}"


def _taken(job_id: int, *, redelivered: bool) -> JobRun | None:
    with transaction.atomic():
        job = StaffJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.finished:
            return None
        lost = redelivered or job.heartbeat_at is None or job.heartbeat_at < stale_before()
        if job.state == StaffJob.State.RUNNING and not lost:
            return None  # another worker runs it
        job.state = StaffJob.State.RUNNING
        job.attempts += 1
        job.heartbeat_at = clock.now()
        job.save(update_fields=["state", "attempts", "heartbeat_at"])
    return JobRun(job=job, attempt=job.attempts)


def _end(run: JobRun, state: str, outcome: str, problems: list[str] | None = None) -> None:
    fields: dict[str, object] = {"state": state, "outcome": outcome}
    if problems:
        fields.update(run.keep_problems(problems))
    if run.job.kind in ALL_OR_NOTHING:
        fields["done"] = 0
    now = clock.now()
    StaffJob.objects.filter(pk=run.job.pk, attempts=run.attempt).update(
        one_at_a_time=None, heartbeat_at=now, finished_at=now, **fields
    )
    run.job.refresh_from_db()


def staff_job_cancel(job: StaffJob) -> None:
    """A waiting job ends now; a running one at its next step (its work undoes what is all
    or nothing)."""
    now = clock.now()
    waiting = StaffJob.objects.filter(pk=job.pk, state=StaffJob.State.QUEUED)
    if not waiting.update(
        state=StaffJob.State.CANCELLED,
        outcome=_("Cancelled before it started."),
        one_at_a_time=None,
        finished_at=now,
        cancel_requested=True,
    ):
        StaffJob.objects.filter(pk=job.pk, state=StaffJob.State.RUNNING).update(
            cancel_requested=True
        )
    job.refresh_from_db()


def staff_job_files_forget() -> str | None:
    """Delete the files of jobs finished over STAFF_JOB_FILES_KEPT_DAYS ago (codes are bearer
    secrets, exports hold users' names); each job's row stays, saying what was done. A file
    two jobs share (a preview's and its import's) goes once neither needs it."""
    kept_since = clock.now() - timedelta(days=settings.STAFF_JOB_FILES_KEPT_DAYS)
    old = StaffJob.objects.filter(finished_at__lt=kept_since).exclude(upload="", result="")
    recent = StaffJob.objects.exclude(pk__in=old.values("pk"))
    needed = set(recent.values_list("upload", flat=True))
    forgotten: set[str] = set()
    for job in old:
        for field in (job.upload, job.result):
            if field.name and field.name not in needed | forgotten:
                field.storage.delete(field.name)
                forgotten.add(field.name)
        StaffJob.objects.filter(pk=job.pk).update(upload="", result="")
    return f"staff jobs' files deleted: {len(forgotten)}" if forgotten else None


def staff_jobs_lost(send: Callable[[int], object]) -> str | None:
    """Send again each job whose message may be lost: waiting, or running unheard of, for
    STALE_SECONDS (a broker that lost its queue, a send that failed). A second message for a
    job is harmless: only one run takes it."""
    lost = StaffJob.objects.filter(
        Q(state=StaffJob.State.QUEUED, created_at__lt=stale_before())
        | Q(state=StaffJob.State.RUNNING, heartbeat_at__lt=stale_before())
    ).values_list("pk", flat=True)
    sent = [send(pk) for pk in lost]
    return f"staff jobs sent again: {len(sent)}" if sent else None
