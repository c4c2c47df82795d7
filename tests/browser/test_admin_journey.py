"""The operator's journey through the admin in a real browser: Debian's Chromium driven by
Playwright against a live server (SPEC section 13). Screenshots land in var/screenshots/.

Chromium comes from scripts/ensure-test-deps (apt), never from Playwright's own download."""

import csv
import io
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from core import clock
from coupons.issuing import service as issuing
from coupons.models import CouponTemplate
from tests.support.browser import chromium
from tests.support.factories import UserFactory

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
PASSWORD = "browser-pass-123"


@pytest.fixture
def page(monkeypatch):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with chromium(monkeypatch) as browser:
        context = browser.new_context(
            viewport={"width": 1366, "height": 768}, locale="en-US", accept_downloads=True
        )
        context.set_default_timeout(10_000)
        yield context.new_page()
        context.close()


def shot(page: Page, name: str) -> None:
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def fill_template_form(page: Page, *, name: str, value: str) -> None:
    start = clock.now() - timedelta(hours=1)
    end = start + timedelta(days=7)
    page.fill("#id_name", name)
    page.select_option("#id_type", "direct")
    page.fill("#id_value", value)
    page.fill("#id_min_amount", "")
    page.fill("#id_total", "100")
    page.fill("#id_per_user_limit", "1")
    page.fill("#id_valid_from_0", start.strftime("%Y-%m-%d"))
    page.fill("#id_valid_from_1", start.strftime("%H:%M:%S"))
    page.fill("#id_valid_until_0", end.strftime("%Y-%m-%d"))
    page.fill("#id_valid_until_1", end.strftime("%H:%M:%S"))


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_the_operator_journey(page: Page, live_server):
    UserFactory(username="operator", password=PASSWORD, is_staff=True, is_superuser=True)
    shopper = UserFactory(username="shopper")
    admin = f"{live_server.url}/admin/"

    # Log in.
    page.goto(admin)
    page.fill("input[name=username]", "operator")
    page.fill("input[name=password]", PASSWORD)
    page.click(".login-btn button")
    expect(page.locator(".logo-wrap")).to_have_text("Coupons administration")

    # Publish, first with a bad amount: the form says what is wrong, nothing is created.
    page.goto(f"{admin}coupons/coupontemplate/add/")
    fill_template_form(page, name="Spring sale", value="50.001")
    page.click("[name=_save]")
    expect(page.locator("#alert .el-alert--error")).to_be_visible()
    expect(page.locator(".field-value .errorlist")).to_have_text(
        "Use at most two decimal places (whole cents)."
    )
    shot(page, "01-publish-invalid")
    assert CouponTemplate.objects.count() == 0
    page.fill("#id_value", "50.00")
    page.click("[name=_save]")
    expect(page.locator(".el-notification .el-icon-success")).to_be_visible()
    template = CouponTemplate.objects.get()
    assert (template.name, template.value) == ("Spring sale", 5000)

    # The list: terms as money and the funnel columns, all visible at 1366 px.
    row = page.locator("#result_list tbody tr").first
    expect(row.locator(".field-terms")).to_have_text("¥50.00 off")
    expect(row.locator(".field-claimed_of_total")).to_have_text("0 / 100")
    expect(row.locator(".field-redemption_rate")).to_have_text("–")
    expect(page.locator("#result_list thead")).to_contain_text("Redemption rate")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "02-list")

    # Edit while nobody has claimed: the value is still a form field.
    page.click("#result_list tbody tr th a")
    page.fill("#id_name", "Spring sale (extended)")
    page.fill("#id_total", "200")
    page.click("[name=_save]")
    expect(page.locator(".field-claimed_of_total").first).to_have_text("0 / 200")
    template.refresh_from_db()
    assert (template.name, template.total) == ("Spring sale (extended)", 200)

    # A shopper claims: the terms are frozen and shown read-only, the funnel and chart move.
    issuing.coupon_claim(template_id=template.pk, user_id=shopper.pk)
    page.goto(f"{admin}coupons/coupontemplate/{template.pk}/change/")
    expect(page.locator("#id_value")).to_have_count(0)
    expect(page.locator(".form-row.field-value_shown .readonly")).to_have_text("¥50.00")
    expect(page.locator(".frozen-note")).to_be_visible()
    expect(page.locator(".funnel-claimed")).to_have_text("1 / 200")
    expect(page.locator(".funnel-rate")).to_have_text("0.0%")
    expect(
        page.locator('svg.activity-chart rect.bar[data-series="claims"]').last
    ).to_have_attribute("data-count", "1")
    expect(page.locator("#recent-claims")).to_contain_text("shopper")
    shot(page, "03-template-page-frozen")

    # Export the coupons (a staff job: its page offers the file) and read the CSV back.
    page.click(".export-csv")
    expect(page.locator("#job-state")).to_have_text("Done")
    expect(page.locator("#job-progress")).to_have_attribute("value", "100")
    shot(page, "03b-export-job-page")
    with page.expect_download() as download_info:
        page.click("#job-download")
    download = download_info.value
    text = Path(download.path()).read_text(encoding="utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(row["username"], row["status"], row["order id"]) for row in rows] == [
        ("shopper", "unused", "")
    ]

    # A claimed template cannot be deleted, and the page says why.
    page.goto(f"{admin}coupons/coupontemplate/{template.pk}/delete/")
    expect(page.locator(".delete-refused .errornote")).to_contain_text(
        "1 coupon has been claimed from this template."
    )

    # Switch the admin to Simplified Chinese.
    page.goto(f"{admin}coupons/coupontemplate/")
    page.select_option("#language-switch select", "zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#result_list thead")).to_contain_text("核销率")
    expect(page.locator("#result_list tbody tr").first.locator(".field-terms")).to_have_text(
        "立减 ¥50.00"
    )
    shot(page, "04-list-zh-hans")
