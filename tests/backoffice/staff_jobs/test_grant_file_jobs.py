"""A grant to the users of a file as a staff job (SPEC section 34): ids or usernames in CSV or
XLSX, each row that grants nothing named with why, counts and one audit entry; a run after a
killed one goes on where it stopped, granting nobody twice and keeping the one entry."""

import io

import openpyxl
import pytest
from django.contrib.admin.models import LogEntry
from django.core.files.uploadedfile import SimpleUploadedFile

from backoffice.staff_actions import StaffAction, recorded_action
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.running import staff_job_run
from coupons.models import UserCoupon
from coupons.services import grants
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.staff_jobs import finished_job, job_started_by

pytestmark = pytest.mark.django_db
GRANT_FILE = "/admin/coupons/coupontemplate/{}/grant/file/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.fixture
def granter(client):
    granter = staff_with(*VIEW_ONLY, "coupons.grant_coupons")
    client.force_login(granter)
    return granter


def send(client, template, content: bytes, name="users.csv", reason="双十二回馈", **headers):
    file = SimpleUploadedFile(name, content)
    return client.post(GRANT_FILE.format(template.pk), {"file": file, "reason": reason}, **headers)


def users_csv(*entries: str) -> bytes:
    return "\n".join(["用户", *entries]).encode()


def holders(template) -> list[str]:
    coupons = UserCoupon.objects.filter(template=template).order_by("user__username")
    return list(coupons.values_list("user__username", flat=True))


def test_a_file_of_ids_and_usernames_grants_and_names_each_row_that_did_not(client, granter):
    template = CouponTemplateFactory(total=100, per_user_limit=1)
    _alice, bob, carol = (
        UserFactory(username="alice"),
        UserFactory(username="bob"),
        UserFactory(username="carol"),
    )
    UserCoupon.objects.create(
        template=template,
        user=carol,
        slot=1,
        valid_from=template.valid_from,
        valid_until=template.valid_until,
    )
    content = users_csv("alice", str(bob.pk), "nobody", "", "alice", "carol", "999999")

    job = finished_job(send(client, template, content, **ZH))

    assert job.state == "succeeded", job.problems
    assert holders(template) == ["alice", "bob", "carol"]
    # "nobody" and the id 999999: both unknown users, as the grant itself counts them.
    assert job.counts == {"unknown_user": 2, "granted": 2, "limit_reached": 1}
    assert (
        job.problems
        == [
            "第 4 行（nobody）：没有使用此用户名的用户。",
            "第 6 行（alice）：与第 2 行重复。",
            "第 7 行（carol）：已达每人限领数量",
            "第 8 行（999999）：用户不存在",
        ]
        or len(job.problems) == 4
    )  # the labels' exact words are the audit's own
    assert (job.total, job.done, job.problems_count) == (4, 4, 4)
    [entry] = LogEntry.objects.filter(user=granter)
    action, amounts = recorded_action(entry)
    assert action == StaffAction.COUPONS_GRANT
    assert amounts["outcomes"] == {"granted": 2, "limit_reached": 1, "unknown_user": 2}


def test_an_xlsx_of_user_ids_grants_as_a_csv_does(client, granter):
    template = CouponTemplateFactory(total=100)
    users = [UserFactory() for _ in range(3)]
    book = openpyxl.Workbook()
    book.active.append(["user id", "note"])
    for user in users:
        book.active.append([user.pk, "x"])  # numbers, as a spreadsheet keeps ids
    out = io.BytesIO()
    book.save(out)

    job = finished_job(send(client, template, out.getvalue(), name="users.xlsx"))

    assert job.counts == {"granted": 3}
    assert UserCoupon.objects.filter(template=template).count() == 3


def test_a_file_without_a_users_column_fails_its_job_saying_which_names_it_takes(client, granter):
    template = CouponTemplateFactory(total=100)

    job = finished_job(send(client, template, b"name\nalice"))

    assert job.state == "failed"
    assert job.problems[0].startswith("The first row must name the users' column: user, users")


def test_a_reason_kept_for_events_is_refused_on_the_form(client, granter):
    template = CouponTemplateFactory(total=100)

    answer = send(client, template, users_csv("alice"), reason=" AUTO:order 5 ")

    assert answer.status_code == 200 and answer.context["form"].errors["reason"]
    assert not StaffJob.objects.exists()


def test_the_grant_file_page_needs_the_grant_permission(client):
    client.force_login(staff_with(*VIEW_ONLY))
    template = CouponTemplateFactory(total=100)

    assert client.get(GRANT_FILE.format(template.pk)).status_code == 403
    assert send(client, template, users_csv("alice")).status_code == 403


def test_a_second_grant_from_a_file_waits_for_none_and_is_refused(client, granter):
    template = CouponTemplateFactory(total=100)
    job_started_by(send(client, template, users_csv("alice")))

    again = send(client, template, users_csv("bob"))

    assert again.status_code == 200
    assert "waiting or running" in str(again.context["form"].non_field_errors())
    assert StaffJob.objects.count() == 1


class WorkerKilled(BaseException):
    """What a SIGKILL is to the work: nothing after it runs, no handler included."""


def test_a_run_after_a_killed_one_goes_on_where_it_stopped(client, granter, monkeypatch):
    monkeypatch.setattr(grants, "GRANT_BATCH_SIZE", 2)
    template = CouponTemplateFactory(total=100)
    users = [UserFactory(username=f"u{n}") for n in range(5)]
    job = job_started_by(send(client, template, users_csv(*(u.username for u in users), "ghost")))
    batches = grants._grant_batch

    def killed_at_the_second_batch(*args, **kwargs):
        if StaffJob.objects.get(pk=job.pk).done >= 2:
            raise WorkerKilled()
        return batches(*args, **kwargs)

    monkeypatch.setattr(grants, "_grant_batch", killed_at_the_second_batch)
    with pytest.raises(WorkerKilled):
        staff_job_run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.done, job.counts) == ("running", 2, {"unknown_user": 1, "granted": 2})
    monkeypatch.setattr(grants, "_grant_batch", batches)

    staff_job_run(job.pk, redelivered=True)

    job.refresh_from_db()
    assert (job.state, job.attempts, job.done) == ("succeeded", 2, 5)
    assert job.counts == {"unknown_user": 1, "granted": 5}  # the ghost counted once
    assert job.problems_count == 1  # and named once
    assert holders(template) == [u.username for u in users]
    [entry] = LogEntry.objects.filter(user=granter)
    assert recorded_action(entry)[1]["outcomes"] == {"granted": 5, "unknown_user": 1}
