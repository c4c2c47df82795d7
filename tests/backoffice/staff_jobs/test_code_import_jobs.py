"""Merchant codes imported as staff jobs (SPEC section 34): the page starts a preview a worker
runs, whose page names each bad row or offers the import; the import runs as another job, all
or nothing, one per template at a time (a second refused at once, 409), cancellable, and a
run after a killed one leaves every code exactly once and one audit entry."""

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.core.files.uploadedfile import SimpleUploadedFile

from backoffice.staff_jobs.errors import StaffJobBusy
from backoffice.staff_jobs.models import StaffJob
from backoffice.staff_jobs.progress import JobRun, JobSuperseded
from backoffice.staff_jobs.running import staff_job_cancel, staff_job_run
from backoffice.staff_jobs.starting import staff_job_start
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import merchant_codes
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.merchant_code_files import codes_of, csv_file
from tests.support.staff_jobs import finished_job, job_started_by

pytestmark = pytest.mark.django_db
IMPORT_PAGE = "/admin/coupons/coupontemplate/{}/codes/import/"
JOB_PAGE = "/admin/staff_jobs/staffjob/{}/change/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def upload(client, template, content: bytes, name="codes.csv", reach="keep", **headers):
    file = SimpleUploadedFile(name, content)
    return client.post(IMPORT_PAGE.format(template.pk), {"file": file, "reach": reach}, **headers)


def confirm(client, preview: StaffJob, **headers):
    return client.post(IMPORT_PAGE.format(preview.template_id), {"preview": preview.pk}, **headers)


@pytest.fixture
def manager(client):
    manager = staff_with(*VIEW_ONLY, "coupons.manage_codes")
    client.force_login(manager)
    return manager


def test_a_preview_job_then_an_import_job_add_the_codes_all_at_once(client, manager):
    template = CouponTemplateFactory(total=10)

    preview = finished_job(
        upload(client, template, csv_file("ADMIN-00001", "ADMIN-00002"), reach="codes_only")
    )
    assert (preview.state, preview.outcome) == ("succeeded", "2 codes can be imported.")
    assert codes_of(template) == set()  # the preview imported nothing
    page = client.get(JOB_PAGE.format(preview.pk)).content.decode()
    assert 'id="confirm-import"' in page and 'http-equiv="refresh"' not in page

    imported = finished_job(confirm(client, preview))

    assert (imported.kind, imported.state, imported.counts) == (
        "codes_import",
        "succeeded",
        {"imported": 2},
    )
    assert (imported.done, imported.total, imported.percent) == (2, 2, 100)
    assert imported.started_by == manager and imported.upload.name == preview.upload.name
    assert codes_of(template) == {"ADMIN-00001", "ADMIN-00002"}
    template.refresh_from_db()
    assert template.has_single_use_codes is True
    assert LogEntry.objects.filter(user=manager).count() == 1
    assert imported.one_at_a_time is None  # the template is free for the next import


def test_the_job_page_names_each_bad_row_in_chinese_and_offers_no_import(client, manager):
    template = CouponTemplateFactory(total=10)

    preview = finished_job(
        upload(client, template, csv_file("GOOD-000001", "bad"), name="商家券码.csv", **ZH)
    )

    page = client.get(JOB_PAGE.format(preview.pk), **ZH).content.decode()
    assert "第 3 行（BAD）" in page and preview.outcome == "无法导入：请修改文件后重新选择。"
    assert "商家券码预检" in page and "商家券码.csv" in page and "已完成" in page
    assert 'id="confirm-import"' not in page
    assert confirm(client, preview).status_code == 302
    assert not StaffJob.objects.filter(kind="codes_import").exists()
    assert codes_of(template) == set()


def test_a_file_that_cannot_be_read_fails_its_job_with_the_reason(client, manager):
    template = CouponTemplateFactory(total=10)

    preview = finished_job(upload(client, template, b"PK\x03\x04 not a zip", name="codes.xlsx"))

    assert preview.state == "failed"
    assert preview.problems == ["The file cannot be read as xlsx."]


def test_an_import_is_only_for_who_previewed(client, manager):
    template = CouponTemplateFactory(total=10)
    preview = finished_job(upload(client, template, csv_file("MINE-000001")))
    client.force_login(staff_with(*VIEW_ONLY, "coupons.manage_codes"))

    assert confirm(client, preview).status_code == 302
    assert client.get(JOB_PAGE.format(preview.pk)).status_code == 404  # not theirs to see
    assert not StaffJob.objects.filter(kind="codes_import").exists()


def test_the_import_page_needs_manage_codes(client):
    client.force_login(staff_with(*VIEW_ONLY))
    template = CouponTemplateFactory(total=10)

    assert client.get(IMPORT_PAGE.format(template.pk)).status_code == 403
    assert upload(client, template, csv_file("NOPE-000001")).status_code == 403
    assert not StaffJob.objects.exists()


def test_a_second_import_of_a_template_is_refused_at_once_with_409(client, manager):
    template = CouponTemplateFactory(total=10)
    preview = finished_job(upload(client, template, csv_file("FIRST-00001")))
    first = job_started_by(confirm(client, preview))  # waiting for a worker

    again = confirm(client, preview, follow=True, **ZH)

    [refused] = [str(message) for message in again.context["messages"]]
    assert refused.startswith("该模板的同类工作正在排队或进行中")
    with pytest.raises(StaffJobBusy) as busy:
        staff_job_start(kind=first.kind, started_by=manager, template=template, upload_of=preview)
    assert busy.value.code == "job_busy"  # api/exceptions.py: 409
    staff_job_cancel(first)
    assert first.state == "cancelled" and first.one_at_a_time is None
    assert job_started_by(confirm(client, preview)).state == "queued"  # free again


def test_a_run_after_a_killed_one_takes_back_its_codes_and_imports_each_once(
    client, manager, monkeypatch
):
    """The state a worker killed after its first batch leaves: the batch's codes committed
    with the job's progress, the job running. The broker's redelivery runs it again."""
    monkeypatch.setattr(merchant_codes, "CODES_PER_INSERT", 2)
    template = CouponTemplateFactory(total=10)
    preview = finished_job(upload(client, template, csv_file(*(f"KILL-0000{n}" for n in range(5)))))
    job = job_started_by(confirm(client, preview))
    SingleUseCode.objects.bulk_create(
        SingleUseCode(template=template, code=code) for code in ("KILL-00000", "KILL-00001")
    )
    StaffJob.objects.filter(pk=job.pk).update(state="running", attempts=1, done=2)

    staff_job_run(job.pk, redelivered=True)

    job.refresh_from_db()
    assert (job.state, job.attempts, job.counts) == ("succeeded", 2, {"imported": 5})
    assert SingleUseCode.objects.filter(template=template).count() == 5
    assert LogEntry.objects.filter(user=manager).count() == 1


def test_a_running_job_is_not_taken_by_a_second_message_while_it_is_heard_from(client, manager):
    template = CouponTemplateFactory(total=10)
    job = job_started_by(upload(client, template, csv_file("TWICE-00001")))
    StaffJob.objects.filter(pk=job.pk).update(
        state="running", attempts=1, heartbeat_at=job.created_at
    )

    staff_job_run(job.pk)  # a message sent again; the job's worker is alive

    job.refresh_from_db()
    assert (job.state, job.attempts) == ("running", 1)


def test_a_run_taken_over_by_a_later_one_writes_nothing_more(client, manager):
    template = CouponTemplateFactory(total=10)
    job = job_started_by(upload(client, template, csv_file("LATER-00001")))
    StaffJob.objects.filter(pk=job.pk).update(state="running", attempts=2)

    with pytest.raises(JobSuperseded):
        JobRun(job=job, attempt=1).advance(1)
    job.refresh_from_db()
    assert job.done == 0


def test_a_cancelled_import_leaves_no_code(client, manager, monkeypatch):
    monkeypatch.setattr(merchant_codes, "CODES_PER_INSERT", 2)
    template = CouponTemplateFactory(total=10)
    preview = finished_job(upload(client, template, csv_file(*(f"STOP-0000{n}" for n in range(5)))))
    job = job_started_by(confirm(client, preview))
    StaffJob.objects.filter(pk=job.pk).update(state="running", attempts=1)  # a worker has it
    job.refresh_from_db()
    client.post(f"/admin/staff_jobs/staffjob/{job.pk}/cancel/")
    StaffJob.objects.filter(pk=job.pk).update(heartbeat_at=None)  # ...and died

    staff_job_run(job.pk)

    job.refresh_from_db()
    assert (job.state, job.done, job.one_at_a_time) == ("cancelled", 0, None)
    assert codes_of(template) == set()


def test_a_lost_job_is_sent_again_and_metrics_count_the_jobs_by_state(client, manager, settings):
    from backoffice.staff_jobs.running import staff_jobs_lost
    from backoffice.staff_jobs.vitals import StaffJobsCollector

    template = CouponTemplateFactory(total=10)
    waiting = job_started_by(upload(client, template, csv_file("WAIT-000001")))
    running = job_started_by(upload(client, template, csv_file("RUN-0000001")))
    long_ago = waiting.created_at - timedelta(minutes=10)
    StaffJob.objects.filter(pk=waiting.pk).update(created_at=long_ago)
    StaffJob.objects.filter(pk=running.pk).update(
        state="running", attempts=1, heartbeat_at=long_ago
    )
    sent: list[int] = []

    staff_jobs_lost(sent.append)
    metrics = {
        (sample.name, tuple(sample.labels.values())): sample.value
        for family in StaffJobsCollector().collect()
        for sample in family.samples
    }

    assert sorted(sent) == sorted([waiting.pk, running.pk])
    assert metrics[("coupons_staff_jobs", ("waiting",))] == 1
    assert metrics[("coupons_staff_jobs", ("lost",))] == 1
    assert metrics[("coupons_staff_jobs", ("running",))] == 0
    assert metrics[("coupons_staff_jobs_oldest_waiting_seconds", ())] >= 600
    staff_job_run(running.pk)  # the message sent again takes the lost job
    running.refresh_from_db()
    assert (running.state, running.attempts) == ("succeeded", 2)


def test_the_job_list_shows_each_staff_member_their_own_jobs_and_a_superuser_all(client, manager):
    template = CouponTemplateFactory(total=10)
    mine = job_started_by(upload(client, template, csv_file("MINE-000001")))
    other = staff_with(*VIEW_ONLY, "coupons.manage_codes")
    client.force_login(other)
    theirs = job_started_by(upload(client, template, csv_file("THEIR-00001")))

    listed = client.get("/admin/staff_jobs/staffjob/")
    page = client.get(JOB_PAGE.format(theirs.pk)).content.decode()

    assert [job.pk for job in listed.context["cl"].result_list] == [theirs.pk]
    assert 'http-equiv="refresh"' in page and 'id="cancel-job"' in page  # waiting
    assert client.get(f"/admin/staff_jobs/staffjob/{mine.pk}/download/").status_code == 404
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    everyone = client.get("/admin/staff_jobs/staffjob/").context["cl"].result_list
    assert {job.pk for job in everyone} == {mine.pk, theirs.pk}


def test_a_finished_job_s_files_are_deleted_after_the_days_kept_and_its_row_stays(
    client, manager, settings
):
    from backoffice.staff_jobs.running import staff_job_files_forget

    settings.STAFF_JOB_FILES_KEPT_DAYS = 7
    template = CouponTemplateFactory(total=10)
    preview = finished_job(upload(client, template, csv_file("OLD-0000001")))
    imported = finished_job(confirm(client, preview))
    storage = preview.upload.storage
    StaffJob.objects.filter(pk=preview.pk).update(
        finished_at=preview.finished_at - timedelta(days=8)
    )

    assert staff_job_files_forget() is None  # its import, recent, still names the file
    assert storage.exists(preview.upload.name)
    StaffJob.objects.update(finished_at=preview.finished_at - timedelta(days=8))
    assert staff_job_files_forget() == "staff jobs' files deleted: 1"

    assert not storage.exists(preview.upload.name)
    preview.refresh_from_db()
    imported.refresh_from_db()
    assert (preview.upload.name, imported.upload.name) == ("", "")
    assert imported.counts == {"imported": 1}  # the row still says what was done
