"""The finished admin in a real browser (SPEC section 17): every admin page and form in
zh-hans with no English left, every action tried as a view-only staff member with nothing
issued, and the coupon CSV read the way Excel reads it.

Debian's Chromium, driven by Playwright against pytest-django's live server."""

import csv
import io
import re
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import BrowserContext, Page, expect

from core import clock
from coupons.issuing import service as issuing
from coupons.models import CouponTemplate, UserCoupon
from coupons.models.single_use_codes import SingleUseCode
from coupons.services import grants
from orders import services as order_services
from orders.models import Category, Order, Product
from tests.support.admin_users import VIEW_ONLY, staff_with
from tests.support.browser import PAGE_TEXTS_JS, chromium, english_words
from tests.support.factories import UserFactory

PASSWORD = "browser-pass-123"
# Latin-letter names this test gives its data (usernames are typed as they are).
OUR_NAMES = {"operator", "viewer", "shopper", "zhangsan", "nobody", "VIP", "TEA"}
LOCAL_PAGE_BUDGET_SECONDS = 120


@pytest.fixture
def browser(monkeypatch):
    with chromium(monkeypatch) as launched:
        yield launched


def chinese_context(browser, live_server) -> BrowserContext:
    context = browser.new_context(
        viewport={"width": 1366, "height": 768}, locale="zh-CN", accept_downloads=True
    )
    context.set_default_timeout(10_000)
    host = urlsplit(live_server.url).hostname
    context.add_cookies(
        [{"name": "django_language", "value": "zh-hans", "domain": host, "path": "/"}]
    )
    return context


def submit(page: Page, selector: str) -> None:
    """Click a button that posts, and wait for the page it leads to (reading the page while it
    is being replaced finds no body)."""
    with page.expect_navigation():
        page.locator(selector).click()


def run_action(page: Page, action: str, *, row: int | None = None) -> None:
    """On the change list shown, tick the row whose pk is `row` (every row when None), choose
    `action` and run it."""
    if row is None:
        page.locator("#action-toggle").check()
    else:
        page.locator(f"input[name=_selected_action][value='{row}']").check()
    submit(page, f"button[data-name={action}]")  # simpleui: a button per action


def log_in(page: Page, admin: str, username: str) -> None:
    page.goto(admin)
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click(".login-btn button")
    # simpleui's frame: the menu, and the user's name on its menu.
    expect(page.locator("#main .el-dropdown")).to_contain_text(username)


def requests_leaving(context: BrowserContext, live_server) -> list[str]:
    """Every request the pages of `context` make, from now on, to anywhere but the live
    server (simpleui's and ECharts' files are all ours: nothing from a CDN, nothing reported)."""
    leaving: list[str] = []

    def note(request) -> None:
        if not request.url.startswith((live_server.url, "data:", "blob:", "about:")):
            leaving.append(request.url)

    context.on("request", note)
    return leaving


def menu_pages(page: Page, admin: str) -> set[str]:
    """The pages simpleui's menu opens (its menu is drawn from a script, not from links)."""
    urls = page.evaluate(
        "() => menus.flatMap(menu => (menu.models || [menu]).map(model => model.url))"
    )
    return {urljoin(admin, url) for url in urls if url}


def a_shop() -> dict:
    """A little of everything the admin shows: templates of each kind and scope, claimed,
    granted and used coupons, orders in three states, categories, products and a group."""
    operator = UserFactory(username="operator", password=PASSWORD, is_staff=True, is_superuser=True)
    shopper = UserFactory(username="shopper")
    zhangsan = UserFactory(username="zhangsan", first_name="三", last_name="张")
    tea = Category.objects.create(name="茶叶")
    oolong = Product.objects.create(name="乌龙茶", price=8800, stock=50, category=tea)
    cup = Product.objects.create(name="茶杯", price=1500, stock=20)
    start = clock.now() - timedelta(hours=1)
    window = {"valid_from": start, "valid_until": start + timedelta(days=7), "total": 100}
    direct = CouponTemplate.objects.create(name="立减五元", type="direct", value=500, **window)
    threshold = CouponTemplate.objects.create(
        name="满百减十", type="threshold", value=1000, min_amount=10000, **window
    )
    percent = CouponTemplate.objects.create(
        name="八五折茶叶",
        type="percent",
        value=15,
        max_discount=2000,
        scope="categories",
        scope_ids=[tea.pk],
        code="VIP-TEA",
        visibility="hidden",
        valid_days=3,
        **window,
    )
    CouponTemplate.objects.create(
        name="茶杯专享", type="direct", value=300, scope="products", scope_ids=[cup.pk], **window
    )
    claimed = issuing.coupon_claim(template_id=direct.pk, user_id=shopper.pk)
    grants.coupon_grant(
        template_id=percent.pk, user_ids=[zhangsan.pk], reason="补偿", granted_by_id=operator.pk
    )
    order_services.order_checkout(
        user_id=shopper.pk, items=[{"product_id": oolong.pk, "quantity": 1}], coupon_id=claimed.pk
    )
    paid = order_services.order_checkout(
        user_id=zhangsan.pk, items=[{"product_id": cup.pk, "quantity": 2}]
    )
    order_services.order_pay(user_id=zhangsan.pk, order_id=paid.pk, amount=paid.pay_amount)
    cancelled = order_services.order_checkout(
        user_id=zhangsan.pk, items=[{"product_id": cup.pk, "quantity": 1}]
    )
    order_services.order_cancel(user_id=zhangsan.pk, order_id=cancelled.pk)
    Group.objects.create(name="客服")
    return {
        "operator": operator,
        "zhangsan": zhangsan,
        "direct": direct,
        "threshold": threshold,
        "percent": percent,
    }


# simpleui's buttons that open a page name it in the HTML it was sent, not as a link: "add"
# (url="..."), "history" (go_url('...')) and "delete" (del('...')).
BUTTON_URLS = re.compile(r"""(?:\surl="|go_url\('|del\(')([^"']+)""")


def admin_links(page: Page, admin: str, html: str) -> set[str]:
    """The admin pages a page links to or opens with a button, without query strings (filters
    and sorting show the same texts) and without the links that leave, log out or act."""
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(link => link.href)")
    found = set()
    for href in [*hrefs, *BUTTON_URLS.findall(html)]:
        url = urljoin(page.url, href).split("#")[0]
        if not url.startswith(admin) or "?" in url:
            continue
        if url.endswith(("/logout/", ".csv")) or "/r/" in url:
            continue
        found.add(url)
    return found


class EnglishFound:
    """English words per page, gathered over a whole walk so one run reports them all."""

    def __init__(self) -> None:
        self.pages: dict[str, list[str]] = {}

    def check(self, page: Page, where: str) -> None:
        leftovers = english_words(page.evaluate(PAGE_TEXTS_JS), allowed=OUR_NAMES)
        if leftovers:
            self.pages[where] = sorted(set(leftovers))


def assert_chinese(page: Page, where: str) -> None:
    found = EnglishFound()
    found.check(page, where)
    assert not found.pages, f"English on {where}: {found.pages[where]}"


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_every_admin_page_and_form_is_chinese(browser, live_server):
    assert english_words(["保存 and continue"]) == ["and", "continue"]  # the detector detects
    shop = a_shop()
    admin = f"{live_server.url}/admin/"
    context = chinese_context(browser, live_server)
    leaving = requests_leaving(context, live_server)
    page = context.new_page()
    log_in(page, admin, "operator")
    started = time.monotonic()
    english = EnglishFound()
    expect(page.frame_locator("iframe").first.locator("#chart-activity svg")).to_be_visible()
    english.check(page, "simpleui's frame with the dashboard tab")

    # Walk every admin page reachable from the menu and the dashboard: lists, add and change
    # forms, history, delete confirmations, the template's grant page, user password pages.
    to_visit, visited = sorted(menu_pages(page, admin)) + [f"{admin}dashboard/"], {admin}
    while to_visit:
        url = to_visit.pop()
        if url in visited:
            continue
        visited.add(url)
        response = page.goto(url)
        assert response.status in (200, 409), f"{url}: {response.status}"
        english.check(page, url)
        to_visit.extend(sorted(admin_links(page, admin, response.text()) - visited))
    assert len(visited) > 40, sorted(visited)
    for expected in (
        "/grant/",
        "/history/",
        "/delete/",
        "/password/",
        "/orders/category/",
        "/dashboard/",
        "/records/",
        "/codes/",
    ):
        assert any(expected in url for url in visited), expected

    # Forms sent back with errors: every add form empty, then the template form wrong.
    add_forms = sorted(url for url in visited if url.endswith("/add/"))
    for url in add_forms:
        page.goto(url)
        submit(page, "[name=_save]")
        expect(page.locator("#alert .el-alert--error")).to_be_visible()
        english.check(page, f"{url} with errors")
    page.goto(f"{admin}coupons/coupontemplate/add/")
    page.fill("#id_name", "错误示例")
    page.select_option("#id_type", "percent")
    page.fill("#id_value", "85.5")
    page.fill("#id_total", "0")
    page.fill("#id_code", "no")
    page.select_option("#id_scope", "categories")
    submit(page, "[name=_save]")
    expect(page.locator(".field-value .errorlist")).to_be_visible()
    english.check(page, "the template form with every kind of error")

    # The actions' pages and their results: grant from the template list and the user list.
    page.goto(f"{admin}coupons/coupontemplate/")
    run_action(page, "grant_to_users", row=shop["threshold"].pk)
    english.check(page, "the grant action's page")
    page.fill("#id_users", "zhangsan\nnobody")
    page.fill("#id_reason", "活动")
    submit(page, "#grant-to-users input[type=submit]")
    expect(page.locator(".el-notification")).to_contain_text("zhangsan")
    english.check(page, "the grant's result")
    page.goto(f"{admin}auth/user/")
    run_action(page, "grant_coupon_to_users", row=shop["zhangsan"].pk)
    english.check(page, "the user list's grant page")
    page.select_option("#id_template", str(shop["direct"].pk))
    page.fill("#id_reason", "回访")
    submit(page, "#grant-to-selected-users input[type=submit]")
    expect(page.locator(".el-notification")).to_contain_text("zhangsan")
    english.check(page, "the user list's grant result")
    page.goto(f"{admin}coupons/coupontemplate/{shop['direct'].pk}/history/")
    english.check(page, "the template's history with the grant")
    page.goto(f"{admin}orders/order/")
    run_action(page, "cancel_orders")
    expect(page.locator("#orders-to-cancel")).to_be_visible()  # asked first, never one click
    english.check(page, "the cancel's confirmation page")
    submit(page, "input[name=confirm]")
    expect(page.locator(".el-notification .el-icon-success")).to_be_visible()
    english.check(page, "the cancel action's result")
    assert Order.objects.filter(status=Order.Status.PENDING_PAYMENT).count() == 0
    # Refund the paid order from the list: a confirmation page asks the reason first; the
    # refund is then in the audit log, worded in Chinese.
    paid = Order.objects.get(status=Order.Status.PAID)
    page.goto(f"{admin}orders/order/")
    run_action(page, "refund_orders", row=paid.pk)
    expect(page.locator("#id_reason")).to_be_visible()
    english.check(page, "the refund's confirmation page")
    page.fill("#id_reason", "质量问题")
    submit(page, "input[name=confirm]")
    expect(page.locator(".el-notification .el-icon-success")).to_be_visible()
    english.check(page, "the refund's result")
    assert Order.objects.get(pk=paid.pk).status == Order.Status.REFUNDED
    page.goto(f"{admin}admin/logentry/")
    expect(page.locator("#result_list")).to_contain_text("质量问题")
    english.check(page, "the audit log with the refund")

    assert leaving == [], leaving
    assert not english.pages, "English left:\n" + "\n".join(
        f"{where}: {words}" for where, words in english.pages.items()
    )
    elapsed = time.monotonic() - started
    print(f"\n{len(visited)} pages, {len(add_forms)} forms with errors: {elapsed:.1f} s")
    assert elapsed < LOCAL_PAGE_BUDGET_SECONDS
    context.close()


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_a_view_only_staff_member_can_act_nowhere(browser, live_server):
    shop = a_shop()
    staff_with(*VIEW_ONLY, username="viewer", password=PASSWORD)
    product = Product.objects.get(name="乌龙茶")
    admin = f"{live_server.url}/admin/"
    context = chinese_context(browser, live_server)
    page = context.new_page()
    log_in(page, admin, "viewer")
    coupons_before = UserCoupon.objects.count()
    orders_before = sorted(Order.objects.values_list("pk", "status"))

    # No action, button or field that acts is shown to them.
    for listing in ("coupons/coupontemplate/", "auth/user/", "orders/order/", "orders/product/"):
        page.goto(f"{admin}{listing}")
        expect(page.locator(".actions button[data-name]:not([data-name=add_item])")).to_have_count(
            0
        )
        assert_chinese(page, listing)
    page.goto(f"{admin}coupons/coupontemplate/{shop['percent'].pk}/change/")
    expect(page.locator("a.grant-to-users")).to_have_count(0)
    expect(page.locator(".export-csv")).to_have_count(0)
    expect(page.locator("a.generate-codes")).to_have_count(0)
    page.goto(f"{admin}orders/product/{product.pk}/change/")
    expect(page.locator("#id_stock_change")).to_have_count(0)

    # Each action and page forged by hand, with a valid CSRF token: refused, nothing issued.
    token = next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": token, "Referer": admin}
    template_pk, user_pk = shop["percent"].pk, shop["zhangsan"].pk
    forged = [
        (
            f"{admin}coupons/coupontemplate/",
            {
                "action": "grant_to_users",
                "_selected_action": str(template_pk),
                "apply": "1",
                "users": "shopper",
                "reason": "forged",
            },
        ),
        (
            f"{admin}coupons/coupontemplate/{template_pk}/grant/",
            {"users": "shopper", "reason": "forged", "apply": "1"},
        ),
        (
            f"{admin}auth/user/",
            {
                "action": "grant_coupon_to_users",
                "_selected_action": str(user_pk),
                "apply": "1",
                "template": str(template_pk),
                "reason": "forged",
            },
        ),
        (
            f"{admin}orders/order/",
            {
                "action": "cancel_orders",
                "_selected_action": str(Order.objects.order_by("pk").first().pk),
                "confirm": "1",
            },
        ),
        (
            f"{admin}orders/product/{product.pk}/change/",
            {"name": "乌龙茶", "price": "88.00", "stock_change": "1000"},
        ),
        (f"{admin}coupons/coupontemplate/{template_pk}/codes/", {"count": "5", "code_prefix": ""}),
    ]
    statuses = [page.request.post(url, form=data, headers=headers).status for url, data in forged]
    assert all(status in (200, 302, 403) for status in statuses), statuses
    assert page.request.get(f"{admin}coupons/coupontemplate/{template_pk}/grant/").status == 403
    export = page.request.post(
        f"{admin}coupons/coupontemplate/{template_pk}/records/export/", headers=headers
    )
    assert export.status == 403

    assert page.request.get(f"{admin}coupons/coupontemplate/{template_pk}/codes/").status == 403
    assert not SingleUseCode.objects.exists()
    assert UserCoupon.objects.count() == coupons_before
    assert not UserCoupon.objects.filter(grant_reason="forged").exists()
    assert sorted(Order.objects.values_list("pk", "status")) == orders_before
    assert Product.objects.get(pk=product.pk).stock == product.stock
    context.close()


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_the_coupon_csv_opens_in_excel(browser, live_server):
    shop = a_shop()
    admin = f"{live_server.url}/admin/"
    context = chinese_context(browser, live_server)
    page = context.new_page()
    log_in(page, admin, "operator")

    page.goto(f"{admin}coupons/coupontemplate/{shop['percent'].pk}/change/")
    page.click(".export-csv")  # a staff job: its page offers the file once written
    expect(page.locator("#job-state")).to_have_text("已完成")
    assert_chinese(page, "the export's job page")
    with page.expect_download() as download_info:
        page.click("#job-download")
    raw = Path(download_info.value.path()).read_bytes()

    # Excel takes a file for UTF-8 only when it starts with the BOM; without it, the legacy
    # code page turns 张三 into 寮犱笁. Then it splits on commas and quotes as csv does.
    assert raw.startswith(b"\xef\xbb\xbf")
    header, *rows = list(csv.reader(io.StringIO(raw[3:].decode("utf-8"), newline="")))
    assert header == [
        "优惠券 ID",
        "模板",
        "用户 ID",
        "用户名",
        "来源",
        "状态",
        "领取时间",
        "结束时间",
        "使用时间",
        "订单 ID",
        "发放原因",
        "发放人",
    ]
    assert not english_words(header)
    (row,) = rows
    assert row[1:2] + row[3:6] + row[10:] == [
        "八五折茶叶",
        "zhangsan",
        "发放",
        "未使用",
        "补偿",
        "operator",
    ]
    assert len(row[6]) == len("2026-06-01 12:00:00") and "." not in row[6]
    context.close()


def test_switching_the_language_in_a_tab_switches_the_whole_admin(browser, live_server):
    """Issue: choosing English in a tab changed only that tab; simpleui's menu and tabs around
    it stayed Chinese until a reload."""
    UserFactory(username="operator", password=PASSWORD, is_staff=True, is_superuser=True)
    admin = f"{live_server.url}/admin/"
    page = chinese_context(browser, live_server).new_page()
    log_in(page, admin, "operator")
    tab = page.frame_locator("iframe").first
    expect(tab.locator("#language-switch select")).to_be_visible()
    expect(page.locator("#main")).to_contain_text("优惠券")

    with page.expect_navigation():
        tab.locator("#language-switch select").select_option("en")

    expect(page.locator("#main .el-dropdown")).to_contain_text("operator")
    expect(page.locator("#main")).not_to_contain_text("优惠券")
    expect(page.locator("#main")).to_contain_text("Coupon templates")
