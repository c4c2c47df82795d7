"""One run of a staff job by a worker, as the job's work sees it: progress written in the
work's own transactions, and the two ways a run stops early (cancelled by staff, or taken over
by a later run of the same job after this one's worker was thought lost)."""

from dataclasses import dataclass
from typing import Any

from backoffice.staff_jobs.models import StaffJob
from core import clock

# Problems kept on the job for its page (each row's, as the import's preview names them);
# the count of all of them is kept beside.
PROBLEMS_KEPT = 200


class JobCancelled(Exception):
    """The staff member asked to cancel: the work stops at its next step and undoes what it
    does all or nothing."""


class JobSuperseded(Exception):
    """A later run took the job (this one's worker was thought lost): this one writes nothing
    more."""


@dataclass
class JobRun:
    job: StaffJob  # as this run took it
    attempt: int

    @property
    def resumed(self) -> bool:
        """Whether an earlier run of the job stopped midway (its worker killed)."""
        return self.attempt > 1 and self.job.done > 0

    def advance(self, done: int, **fields: Any) -> None:
        """Record `done` (and other fields of the job) as of now. Called inside the work's own
        transaction, so the progress commits with what it counts; raises JobCancelled or
        JobSuperseded (rolling that transaction back) instead."""
        mine = StaffJob.objects.filter(pk=self.job.pk, attempts=self.attempt)
        if mine.filter(cancel_requested=False).update(
            done=done, heartbeat_at=clock.now(), **fields
        ):
            self.job.done = done
            for name, value in fields.items():
                setattr(self.job, name, value)
            return
        if mine.exists():
            raise JobCancelled()
        raise JobSuperseded()

    def note(self, **fields: Any) -> None:
        """Record fields that count nothing (the size of the work), cancelled or not."""
        if not StaffJob.objects.filter(pk=self.job.pk, attempts=self.attempt).update(
            heartbeat_at=clock.now(), **fields
        ):
            raise JobSuperseded()
        for name, value in fields.items():
            setattr(self.job, name, value)

    def finish(self, outcome: str, **fields: Any) -> None:
        """The job done, with its `outcome` in words; inside the work's last transaction where
        it has one, so the job is done exactly when its work is."""
        now = clock.now()
        fields = {"state": StaffJob.State.SUCCEEDED, "outcome": outcome, **fields}
        if not StaffJob.objects.filter(pk=self.job.pk, attempts=self.attempt).update(
            one_at_a_time=None, heartbeat_at=now, finished_at=now, **fields
        ):
            raise JobSuperseded()
        for name, value in fields.items():
            setattr(self.job, name, value)

    def keep_problems(self, problems: list[str], *, count: int | None = None) -> dict[str, Any]:
        """The fields that add `problems` to the job's (the first PROBLEMS_KEPT kept), for
        advance()."""
        kept = list(self.job.problems)
        return {
            "problems": kept + problems[: max(PROBLEMS_KEPT - len(kept), 0)],
            "problems_count": self.job.problems_count + (len(problems) if count is None else count),
        }
