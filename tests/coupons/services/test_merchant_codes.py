"""Merchant codes in (SPEC section 26): codes a merchant supplies in CSV or XLSX are added to a
template all or nothing; each bad row is named with its problem; a dry run says the same and
changes nothing; the imported codes redeem like generated ones."""

import io

import openpyxl
import pytest
from django.contrib.admin.models import LogEntry
from django.core.files.uploadedfile import SimpleUploadedFile

from backoffice.staff_actions import StaffAction, recorded_action, staff_audit
from coupons.errors import CodesFileInvalid
from coupons.models import UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services.merchant_codes import (
    merchant_codes_check,
    merchant_codes_import,
    merchant_codes_read,
)
from tests.support.clients import bearer_client
from tests.support.factories import CouponTemplateFactory, UserFactory
from tests.support.merchant_code_files import codes_of, csv_file

pytestmark = pytest.mark.django_db


def xlsx_file(*cells: object, header: str = "券码") -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["备注", header])
    for cell in cells:
        sheet.append(["x", cell])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_csv_of_merchant_codes_is_imported_upper_cased_and_recorded(staff):
    template = CouponTemplateFactory(total=10)
    dataset = merchant_codes_read(
        name="shop.CSV", content=csv_file("shop-0001-ab", " SHOP00000002 ")
    )

    imported = merchant_codes_import(
        template_id=template.pk,
        dataset=dataset,
        file_name="shop.CSV",
        audit=staff_audit(staff, StaffAction.CODES_IMPORT),
    )

    assert imported == 2
    assert codes_of(template) == {"SHOP-0001-AB", "SHOP00000002"}
    entry = LogEntry.objects.get(object_id=str(template.pk))
    assert recorded_action(entry) == (
        StaffAction.CODES_IMPORT,
        {"count": 2, "file": "shop.CSV", "codes_only": False},
    )


def test_an_xlsx_column_named_in_chinese_and_numeric_cells_are_read():
    template = CouponTemplateFactory(total=10)
    dataset = merchant_codes_read(name="codes.xlsx", content=xlsx_file(12345678, "ABCD-EFGH"))

    assert merchant_codes_import(template_id=template.pk, dataset=dataset, file_name="c") == 2
    assert codes_of(template) == {"12345678", "ABCD-EFGH"}


def test_every_bad_row_is_named_and_nothing_is_imported():
    template = CouponTemplateFactory(total=100, code="SHARED-CODE-1")
    other = CouponTemplateFactory()
    SingleUseCode.objects.create(template=other, code="TAKEN-00001")
    rows = [
        "GOOD-00001",
        "short",
        "BAD_CHAR_001",
        "GOOD-00001",
        "taken-00001",
        "shared-code-1",
        "",
        None,
        "-DASHFIRST1",
    ]
    dataset = merchant_codes_read(name="f.csv", content=csv_file(*rows))

    with pytest.raises(CodesFileInvalid) as refused:
        merchant_codes_import(template_id=template.pk, dataset=dataset, file_name="f.csv")

    assert refused.value.fields == {
        "file": [
            "Row 3 (SHORT): A code has 8 to 21 characters.",
            "Row 4 (BAD_CHAR_001): Letters A-Z, digits and dashes inside only.",
            "Row 5 (GOOD-00001): Also in row 2.",
            "Row 6 (TAKEN-00001): This code exists already.",
            "Row 7 (SHARED-CODE-1): This code exists already.",
            "Row 8 (–): No code.",
            "Row 10 (-DASHFIRST1): Letters A-Z, digits and dashes inside only.",
        ]
    }
    assert codes_of(template) == set()
    assert not LogEntry.objects.exists()


def test_a_code_taken_between_the_check_and_the_insert_leaves_nothing(monkeypatch):
    from coupons.services import merchant_codes

    template = CouponTemplateFactory(total=10_000)
    other = CouponTemplateFactory()
    codes = [f"RACE-{n:07d}" for n in range(6_000)]  # two batches
    dataset = merchant_codes_read(name="f.csv", content=csv_file(*codes))
    checked = merchant_codes._checked

    def meanwhile(template, dataset):
        found = checked(template, dataset)
        SingleUseCode.objects.create(template=other, code=codes[-1])  # in the second batch
        return found

    monkeypatch.setattr(merchant_codes, "_checked", meanwhile)

    with pytest.raises(CodesFileInvalid):
        merchant_codes_import(template_id=template.pk, dataset=dataset, file_name="f.csv")

    assert codes_of(template) == set()
    assert not LogEntry.objects.exists()


def test_codes_beyond_the_remaining_total_are_refused_whole():
    template = CouponTemplateFactory(total=3)
    SingleUseCode.objects.create(template=template, code="UNUSED-0001")
    dataset = merchant_codes_read(
        name="f.csv", content=csv_file("NEW-000001", "NEW-000002", "NEW-000003")
    )

    check = merchant_codes_check(template_id=template.pk, dataset=dataset)
    with pytest.raises(CodesFileInvalid) as refused:
        merchant_codes_import(template_id=template.pk, dataset=dataset, file_name="f.csv")

    assert check.good == 3 and not check.problems
    assert "at most 2 more" in check.over_remaining
    assert refused.value.fields == {"file": [check.over_remaining]}
    assert codes_of(template) == {"UNUSED-0001"}


def test_the_dry_run_changes_nothing_and_says_what_the_import_would():
    template = CouponTemplateFactory(total=10)
    dataset = merchant_codes_read(name="f.csv", content=csv_file("DRY-RUN-0001", "x"))

    check = merchant_codes_check(template_id=template.pk, dataset=dataset)

    assert check.good == 1
    assert [(p.line, p.code) for p in check.problems] == [(3, "X")]
    assert not check.importable
    assert codes_of(template) == set()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("codes.txt", b"code\nABCDEFGH1", "A .csv or .xlsx file is required."),
        ("codes.xlsx", b"not a workbook", "The file cannot be read as xlsx."),
        ("codes.csv", b"number\nABCDEFGH1", "The first row must name the codes' column"),
        ("codes.csv", b"", "The file cannot be read as csv."),
        ("codes.csv", b"code\n" + b"A" * 200_000 + b"\n", "The file cannot be read as csv."),
    ],
)
def test_a_file_that_is_not_a_codes_file_is_refused_naming_file(name, content, message):
    with pytest.raises(CodesFileInvalid) as refused:
        merchant_codes_read(name=name, content=content)

    assert message in refused.value.fields["file"][0]


def test_a_csv_with_old_mac_line_ends_is_read():
    dataset = merchant_codes_read(name="codes.csv", content=b"code\rMAC-LINE-0001\rMAC-LINE-0002")

    assert list(dataset) == [(2, "MAC-LINE-0001"), (3, "MAC-LINE-0002")]


def test_a_csv_saved_by_excel_in_china_is_read():
    content = "备注,券码\n春节,CNY-2027-0001\n".encode("gb18030")

    dataset = merchant_codes_read(name="codes.csv", content=content)

    assert list(dataset) == [(2, "CNY-2027-0001")]


def test_an_imported_code_redeems_once_and_can_make_the_template_codes_only():
    template = CouponTemplateFactory(total=10)
    dataset = merchant_codes_read(name="f.csv", content=csv_file("REDEEM-ME-01"))
    merchant_codes_import(
        template_id=template.pk, dataset=dataset, file_name="f.csv", codes_only=True
    )
    first, second = UserFactory(), UserFactory()

    won = bearer_client(first).post("/api/coupons/redeem", {"code": "redeem-me-01"}, format="json")
    lost = bearer_client(second).post(
        "/api/coupons/redeem", {"code": "REDEEM-ME-01"}, format="json"
    )

    assert won.status_code == 201, won.json()
    assert lost.status_code == 409 and lost.json()["code"] == "code_used"
    assert UserCoupon.objects.filter(template=template, source=UserCoupon.Source.CODE).count() == 1
    template.refresh_from_db()
    assert template.has_single_use_codes is True


# --- The admin API ----------------------------------------------------------------------------


def import_by_api(client, template_id, content: bytes, headers=None, **fields):
    file = SimpleUploadedFile("codes.csv", content)
    return client.post(
        f"/api/admin/coupons/{template_id}/codes/import",
        {"file": file, **fields},
        format="multipart",
        **(headers or {}),
    )


def test_the_api_imports_a_file_and_says_how_many(staff_client):
    template = CouponTemplateFactory(total=10)

    answer = import_by_api(staff_client, template.pk, csv_file("API-0000001"), codes_only="true")

    assert answer.status_code == 201, answer.json()
    assert answer.json() == {"imported": 1, "codes_only": True}
    assert codes_of(template) == {"API-0000001"}


def test_the_api_dry_run_imports_nothing(staff_client):
    template = CouponTemplateFactory(total=10)

    answer = import_by_api(staff_client, template.pk, csv_file("API-0000001"), dry_run="true")

    assert answer.status_code == 200, answer.json()
    assert answer.json() == {"imported": 1, "codes_only": False}
    assert codes_of(template) == set()


def test_the_api_names_each_bad_row_under_file_in_the_request_language(staff_client):
    template = CouponTemplateFactory(total=10)

    answer = import_by_api(
        staff_client, template.pk, csv_file("OK-00000001", "x"), {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    )

    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "invalid"
    assert body["fields"]["file"] == ["第 3 行（X）：券码为 8 至 21 个字符。"]
    assert codes_of(template) == set()


def test_the_api_refuses_a_missing_file_and_an_unknown_template(staff_client):
    template = CouponTemplateFactory(total=10)

    missing = staff_client.post(
        f"/api/admin/coupons/{template.pk}/codes/import", {}, format="multipart"
    )
    unknown = import_by_api(staff_client, 999_999, csv_file("API-0000001"))

    assert missing.status_code == 400 and "file" in missing.json()["fields"]
    assert unknown.status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_second_import_of_the_same_template_waits_its_turn_then_is_refused_with_409(
    staff_client,
):
    """The first holds the template's lock (as a running import does, from its own session)
    past the second's wait: the second answers 409 codes_busy, never a 503 after the database
    client's read timeout, and its worker's connection stays healthy for the next request."""
    import MySQLdb
    from django.db import connection

    if connection.vendor != "mysql":
        pytest.skip("the lock is MariaDB's GET_LOCK")
    template = CouponTemplateFactory(total=10)
    name = f"{connection.settings_dict['NAME']}:single-use-codes:{template.pk}"[-64:]
    settings = connection.settings_dict
    first = MySQLdb.connect(
        host=settings["HOST"], port=int(settings["PORT"] or 3306), user=settings["USER"]
    )
    try:
        cursor = first.cursor()
        cursor.execute("SELECT GET_LOCK(%s, 0)", [name])
        assert cursor.fetchone() == (1,)

        second = import_by_api(staff_client, template.pk, csv_file("BUSY-0001"))
    finally:
        first.close()
    after = import_by_api(staff_client, template.pk, csv_file("BUSY-0001"))

    assert (second.status_code, second.json()["code"]) == (409, "codes_busy")
    assert after.status_code == 201
    assert codes_of(template) == {"BUSY-0001"}
