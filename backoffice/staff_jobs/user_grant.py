"""A grant to the users listed in a file (SPEC section 34): CSV or XLSX, a column of user ids
or usernames, up to 100,000 users, through coupons/services/grants.py in a worker. Each row
that grants nothing says why, as the code import's rows do: no user, a user twice, nobody by
that name or id, or the grant's outcome for that user (limit reached, sold out...). The
coupons of every batch commit with the job's progress and counts, so a run whose worker was
killed goes on from there."""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.translation import gettext as _

from backoffice.audit_messages import GRANT_OUTCOMES
from backoffice.staff_actions import StaffAction, StaffActionAudit
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.progress import JobRun
from core.limits import is_id_text
from coupons.errors import TemplateInvalid
from coupons.services import grants
from coupons.services.merchant_codes import RowProblem
from coupons.spreadsheet_rows import (
    CELL_MAX_CHARACTERS,
    SpreadsheetTooLarge,
    cell_text,
    csv_rows,
    xlsx_rows,
)

# The column that names the users, as its header may name it.
USER_HEADERS = ("user", "users", "username", "user id", "user_id", "id", "用户", "用户名", "用户id")
NAMES_PER_QUERY = 5_000
# Outcomes that are not a problem of the row.
GRANTED = ("granted", "already_granted")


@dataclass(frozen=True)
class UserRows:
    """The file's users in its order, each once, with the row that names it, and each
    problem row's message."""

    user_ids: list[int]
    rows: dict[int, tuple[int, str]]  # user id: (line, as written)
    problems: list[str]
    unknown_names: int  # rows naming nobody by that username


def _refuse(message: str) -> TemplateInvalid:
    return TemplateInvalid(_("The file cannot be granted."), fields={"file": [message]})


def _cells(job: StaffJob) -> list:
    extension = job.upload_name.rsplit(".", 1)[-1].lower() if "." in job.upload_name else ""
    if extension not in ("csv", "xlsx"):
        raise _refuse(_("A .csv or .xlsx file is required."))
    with job.upload.open("rb") as upload:
        content = upload.read(settings.STAFF_FILE_MAX_BYTES + 1)
    if len(content) > settings.STAFF_FILE_MAX_BYTES:
        limit = settings.STAFF_FILE_MAX_BYTES
        raise _refuse(_("At most %(bytes)d bytes.") % {"bytes": limit})
    try:
        return list(csv_rows(content) if extension == "csv" else xlsx_rows(content))
    except SpreadsheetTooLarge as refused:
        raise _refuse(str(refused)) from refused
    except Exception as error:  # any reader's error: the file is not what its name says
        message = _("The file cannot be read as %(format)s.") % {"format": extension}
        raise _refuse(message) from error


def user_rows(job: StaffJob) -> UserRows:
    lines = iter(_cells(job))
    headers = [cell_text(cell).lower() for cell in next(lines, [])]
    column = next((i for i, header in enumerate(headers) if header in USER_HEADERS), None)
    if column is None:
        message = _("The first row must name the users' column: %(names)s.")
        raise _refuse(message % {"names": ", ".join(USER_HEADERS)})
    named: list[tuple[int, str]] = []
    problems: list[str] = []
    for line, row in enumerate(lines, 2):
        if not any(cell not in (None, "") for cell in row):
            continue
        entry = cell_text(row[column]) if column < len(row) else ""
        if len(entry) > CELL_MAX_CHARACTERS:
            raise _refuse(_("Row %(line)d: a cell is longer than %(count)d characters.") % {
                "line": line, "count": CELL_MAX_CHARACTERS})  # fmt: skip
        if not entry:
            problems.append(_row_problem(line, entry, _("No user.")))
        elif len(named) == grants.MAX_FILE_GRANT_USERS:
            count = grants.MAX_FILE_GRANT_USERS
            raise _refuse(_("At most %(count)d users in one file.") % {"count": count})
        else:
            named.append((line, entry))
    ids = _user_ids([entry for _line, entry in named])
    user_ids: list[int] = []
    rows: dict[int, tuple[int, str]] = {}
    unknown = 0
    for line, entry in named:
        user_id = ids.get(entry)
        if user_id is None:
            unknown += 1
            problems.append(_row_problem(line, entry, _("Nobody has this username.")))
        elif user_id in rows:
            also = _("Also in row %(line)d.") % {"line": rows[user_id][0]}
            problems.append(_row_problem(line, entry, also))
        else:
            rows[user_id] = (line, entry)
            user_ids.append(user_id)
    return UserRows(user_ids, rows, problems, unknown)


def _user_ids(entries: list[str]) -> dict[str, int]:
    """Each entry's user id: a line of digits is one, anything else a username (looked up
    NAMES_PER_QUERY at a time); an unknown id is the grant's to report."""
    found = {entry: int(entry) for entry in entries if is_id_text(entry)}
    names = [entry for entry in entries if entry not in found]
    for start in range(0, len(names), NAMES_PER_QUERY):
        chunk = names[start : start + NAMES_PER_QUERY]
        users = get_user_model().objects.filter(username__in=chunk)
        found.update(users.values_list("username", "pk"))
    return found


def _row_problem(line: int, entry: str, problem: str) -> str:
    return str(RowProblem(line=line, code=entry, problem=problem))


def grant_file(run: JobRun) -> None:
    job = run.job
    assert job.template_id is not None
    users = user_rows(job)
    # The file's own problems and its unknown names, once: a run after a killed one finds them
    # kept (counted with the grant's own unknown users, as the audit records them).
    counts = {name: count for name, count in job.counts.items() if name in GRANT_OUTCOMES}
    first = job.done == 0 and job.problems_count == 0
    if first and users.unknown_names:
        counts["unknown_user"] = users.unknown_names
    file_problems = run.keep_problems(users.problems) if first else {}
    run.advance(job.done, total=len(users.user_ids), counts=dict(counts), **file_problems)
    if not users.user_ids:
        run.finish(_("Nobody to grant to."))
        return

    def batch_done(done: int, batch: grants.GrantResult) -> None:
        problems = []
        for outcome, user_ids in vars(batch).items():
            if not user_ids:
                continue
            if outcome not in GRANTED:
                label = str(GRANT_OUTCOMES[outcome])
                problems += [_row_problem(*users.rows[user_id], label) for user_id in user_ids]
            counts[outcome] = counts.get(outcome, 0) + len(user_ids)
        entries = audit.entry_ids()
        run.advance(done, counts=dict(counts), audit_entries=entries, **run.keep_problems(problems))

    # The run's one audit entry, continued by a run after a killed one.
    audit = StaffActionAudit(job.started_by, StaffAction.COUPONS_GRANT, entry_ids=job.audit_entries)
    grants.coupon_grant(
        template_id=job.template_id,
        user_ids=users.user_ids,
        reason=job.options.get("reason", ""),
        granted_by_id=job.started_by_id,
        on_batch=batch_done,
        audit=audit,
        max_users=grants.MAX_FILE_GRANT_USERS,
        resumed=grants.GrantResumed(decided=job.done, outcomes=dict(counts)),
    )
    summary = "; ".join(f"{GRANT_OUTCOMES[name]} {n}" for name, n in counts.items() if n)
    run.finish(_("Grant finished: %(outcomes)s.") % {"outcomes": summary or "–"})
