"""Spreadsheets out (SPEC sections 26 and 34): the template list and single-use codes as XLSX
and CSV from the admin's list actions, written by a staff job in the admin's language,
formulas written as text, each export recorded; refused to whoever lacks the permissions."""

import io

import openpyxl
import pytest
from django.contrib.admin.models import LogEntry

from backoffice.staff_actions import StaffAction, recorded_action
from backoffice.staff_jobs.models import StaffJob
from coupons.models.single_use_codes import SingleUseCode
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.staff_jobs import finished_job, job_file

pytestmark = pytest.mark.django_db
TEMPLATES = "/admin/coupons/coupontemplate/"
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def act(client, action: str, *templates, **headers):
    body = {"action": action, "_selected_action": [t.pk for t in templates]}
    return client.post(TEMPLATES, body, **headers)


def exported(client, action: str, *templates, **headers) -> bytes:
    """The file the action's job wrote, downloaded from the job's page."""
    job = finished_job(act(client, action, *templates, **headers))
    assert job.state == "succeeded", (job.outcome, job.problems)
    return job_file(client, job)


def sheet_rows(content: bytes) -> list[tuple]:
    book = openpyxl.load_workbook(io.BytesIO(content))
    return list(book.active.iter_rows(values_only=True))


def test_the_template_list_exports_as_xlsx_with_its_funnel_in_chinese(client):
    exporter = staff_with(*VIEW_ONLY, "coupons.export_coupons")
    client.force_login(exporter)
    tea = CouponTemplateFactory(name="=HYPERLINK(1)", value=500, total=20)
    CouponTemplateFactory(name="not chosen")

    job = finished_job(act(client, "export_templates_xlsx", tea, **ZH))

    assert job.result.name.endswith(".xlsx") and job.outcome == "已导出 1 行。"
    download = client.get(f"/admin/staff_jobs/staffjob/{job.pk}/download/")
    assert download["Content-Disposition"].startswith('attachment; filename="coupon-templates')
    header, *rows = sheet_rows(b"".join(download.streaming_content))
    assert header[:9] == (
        *("ID", "名称", "优惠内容", "适用范围", "领取方式", "活动"),
        *("发放总量", "已领取", "已使用"),
    )
    assert len(rows) == 1
    # Numbers as numbers, which Excel sums (they were text); the formula as text.
    assert rows[0][:3] + rows[0][6:9] == (tea.pk, "'=HYPERLINK(1)", "立减 ¥5.00", 20, 0, 0)
    entry = LogEntry.objects.get(user=exporter)
    assert entry.object_id is None
    assert recorded_action(entry) == (StaffAction.TEMPLATES_EXPORT, {"count": 1, "format": "XLSX"})


def test_the_template_list_exports_as_csv(client):
    client.force_login(staff_with(*VIEW_ONLY, "coupons.export_coupons"))
    tea = CouponTemplateFactory(name="Tea")

    text = exported(client, "export_templates_csv", tea).decode("utf-8")
    assert text.startswith("\ufeffID,name,terms")
    assert f"{tea.pk},Tea," in text


def test_codes_export_as_xlsx_with_who_used_them(client):
    exporter = staff_with(*VIEW_ONLY, "coupons.export_coupons", "coupons.manage_codes")
    client.force_login(exporter)
    template = CouponTemplateFactory(name="Spring")
    shopper = UserFactory(username="lin")
    SingleUseCode.objects.create(template=template, code="SPRING-000001")
    used = SingleUseCode.objects.create(template=template, code="SPRING-000002")
    SingleUseCode.objects.filter(pk=used.pk).update(used_by=shopper, used_at=template.created_at)

    header, *rows = sheet_rows(exported(client, "export_single_use_codes_xlsx", template))
    assert header[:4] == ("template id", "template", "code", "used by")
    assert [row[2:4] for row in rows] == [("SPRING-000001", None), ("SPRING-000002", "lin")]
    entry = LogEntry.objects.get(user=exporter)
    assert recorded_action(entry) == (StaffAction.CODES_EXPORT, {"count": 2, "format": "XLSX"})


@pytest.mark.parametrize(
    ("action", "holding"),
    [
        ("export_templates_xlsx", ()),
        ("export_templates_csv", ()),
        ("export_single_use_codes_xlsx", ("coupons.export_coupons",)),
    ],
)
def test_an_export_needs_its_permissions(client, action, holding):
    client.force_login(staff_with(*VIEW_ONLY, *holding))
    template = CouponTemplateFactory()
    SingleUseCode.objects.create(template=template, code="SECRET-00001")

    response = act(client, action, template)

    assert response.status_code in (200, 302)
    assert not StaffJob.objects.exists()
    assert not LogEntry.objects.exists()


def test_a_name_with_a_control_character_still_exports_as_xlsx(client):
    client.force_login(staff_with(*VIEW_ONLY, "coupons.export_coupons"))
    odd = CouponTemplateFactory(name="Tea\x01time")

    header, *rows = sheet_rows(exported(client, "export_templates_xlsx", odd))
    assert rows[0][1] == "Tea\ufffdtime"  # replaced, not a failed download
